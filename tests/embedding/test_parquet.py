"""`embed` into Parquet on the local engine: rows equal the dump, resume skips finished parts, one weighted layer."""
from pathlib import Path

import numpy
import pytest

from spacy_elmo.embedding.dump import DumpError, embed_file

from .inputs_data import datasets, write_text


def test_local_parquet_rows_equal_the_dump_and_resume_skips_finished_parts(allennlp_bilm, inputs_dir, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    from spacy_elmo.embedding.parquet import part_name, read_parts

    pattern = str(inputs_dir / "*")
    dump, _ = datasets(embed_file(allennlp_bilm, pattern, tmp_path / "d.hdf5", lang="en"))
    out = tmp_path / "parquet"
    embed_file(allennlp_bilm, pattern, out, lang="en", output_format="parquet", chunk_lines=2)
    rows = dict(read_parts(str(out)))
    assert sorted(rows) == sorted(dump) and all(numpy.array_equal(rows[k], dump[k]) for k in dump)
    table = pq.read_table(out / part_name(3, 0))  # in.txt, lines 0-1
    assert table.column("key").to_pylist() == ["3:0", "3:1"] and table.column("number").to_pylist() == [0, 1]
    assert table.column("tokens").to_pylist() == [["The", "cat", "sat", "."], []]
    spacy_part = pq.read_table(out / part_name(2, 0)).to_pydict()
    assert spacy_part["doc"] == [0, 0] and spacy_part["start"] == [0, 3]
    # a rerun without --resume is refused; with it, a finished part is left as it is
    with pytest.raises(DumpError, match="--resume"):
        embed_file(allennlp_bilm, pattern, out, lang="en", output_format="parquet", chunk_lines=2)
    sentinel = out / part_name(3, 1)
    sentinel.write_bytes(b"sentinel: a finished part")
    missing = out / part_name(3, 2)
    missing.unlink()
    embed_file(allennlp_bilm, pattern, out, lang="en", output_format="parquet", chunk_lines=2, resume=True)
    assert sentinel.read_bytes() == b"sentinel: a finished part" and missing.exists()
    assert pq.read_table(missing).column("key").to_pylist() == ["3:4"]
    # --overwrite starts again
    embed_file(allennlp_bilm, pattern, out, lang="en", output_format="parquet", chunk_lines=2, overwrite=True)
    assert pq.read_table(sentinel).column("key").to_pylist() == ["3:2", "3:3"]


def test_parquet_single_combined_layer(allennlp_bilm, tmp_path):
    pytest.importorskip("pyarrow")
    from spacy_elmo.embedding.parquet import read_parts

    import pyarrow.parquet as pq

    from spacy_elmo.embedding.dump import recorded_layer_mode

    path = write_text(tmp_path / "in.txt")
    out = embed_file(allennlp_bilm, path, tmp_path / "pq", output_format="parquet", layers="weighted",
                     layer_weights=[0.2, 0.3, 0.5])
    rows = dict(read_parts(str(out)))
    full = allennlp_bilm.embed([["The", "cat", "sat", "."]])[0]
    assert rows["0"].shape == (4, 32) and rows["1"].shape == (0, 32)
    numpy.testing.assert_allclose(rows["0"], numpy.tensordot([0.2, 0.3, 0.5], full, 1), atol=1e-6)
    # each part records the mode; "mix", which parts of an earlier version say, reads as the same mode
    for part in sorted(Path(out).glob("*.parquet")):
        recorded = pq.read_schema(part).metadata[b"spacy_elmo.layers"]
        assert recorded == b"weighted" and recorded_layer_mode(recorded) == recorded_layer_mode(b"mix")
