"""Regression: Parquet `--overwrite` left stale parts and `--resume` duplicated rows.

`--overwrite` removed only the parts of the files it was given: after a run
over two inputs, a rerun over one kept `part-00001-*.parquet`, so the
directory read as both runs. A run stopped after two parts and resumed with
another `--chunk-lines` wrote units again into parts of other names: 200
duplicated rows. `--overwrite` now removes every part (and leftover
temporary file) of the run's share; every part records the run's settings,
`chunk_lines` included, and a resume with others is refused.
"""
import pytest

from spacy_elmo.embedding.dump import DumpError, embed_file

pytest.importorskip("pyarrow.parquet")

from spacy_elmo.embedding.parquet import part_name, read_parts  # noqa: E402

LINES = [f"line number {i} of the text ." for i in range(7)]


@pytest.fixture
def texts(tmp_path):
    paths = []
    for name in ("a.txt", "b.txt"):
        path = tmp_path / name
        path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def test_overwrite_removes_every_part_and_leftover_temporary_file(allennlp_bilm, texts, tmp_path):
    out = tmp_path / "pq"
    embed_file(allennlp_bilm, [str(p) for p in texts], out, output_format="parquet", chunk_lines=4)
    assert (out / part_name(1, 0)).exists()
    stale = out / f".{part_name(0, 5)}.12345.tmp"  # left by a killed run
    stale.write_bytes(b"half a part")
    embed_file(allennlp_bilm, texts[0], out, output_format="parquet", chunk_lines=4, overwrite=True)
    assert sorted(p.name for p in out.iterdir()) == [part_name(0, 0), part_name(0, 1)]
    keys = [key for key, _ in read_parts(str(out))]
    assert keys == [str(i) for i in range(len(LINES))]


def test_a_run_over_fewer_inputs_without_a_flag_is_refused(allennlp_bilm, texts, tmp_path):
    out = tmp_path / "pq"
    embed_file(allennlp_bilm, [str(p) for p in texts], out, output_format="parquet", chunk_lines=4)
    with pytest.raises(DumpError, match="holds 4 part"):
        embed_file(allennlp_bilm, texts[0], out, output_format="parquet", chunk_lines=4)


def test_resume_with_another_chunking_is_refused(allennlp_bilm, texts, tmp_path, inject):
    out = tmp_path / "pq"
    inject("embed.chunk:1:enospc")  # stopped once its first part is committed
    with pytest.raises(OSError):
        embed_file(allennlp_bilm, texts[0], out, output_format="parquet", chunk_lines=3)
    inject("")
    assert sorted(p.name for p in out.glob("part-*")) == [part_name(0, 0)]
    with pytest.raises(DumpError, match="--chunk-lines: 3 in it, 2 in this run"):
        embed_file(allennlp_bilm, texts[0], out, output_format="parquet", chunk_lines=2, resume=True)
    with pytest.raises(DumpError, match="--layers: all in it, top in this run"):
        embed_file(allennlp_bilm, texts[0], out, output_format="parquet", chunk_lines=3, resume=True, layers="top")
    assert sorted(p.name for p in out.glob("part-*")) == [part_name(0, 0)]
    embed_file(allennlp_bilm, texts[0], out, output_format="parquet", chunk_lines=3, resume=True)
    keys = [key for key, _ in read_parts(str(out))]
    assert sorted(keys, key=int) == [str(i) for i in range(len(LINES))]  # each unit once


@pytest.mark.parametrize("several", [True, False])
def test_a_shard_overwrites_only_its_own_share(allennlp_bilm, texts, tmp_path, several):
    """Shards write into one directory: one shard's --overwrite must leave the other shards' parts."""
    out = tmp_path / "pq"
    inputs = [str(p) for p in texts] if several else str(texts[0])
    for k in range(2):
        embed_file(allennlp_bilm, inputs, out, output_format="parquet", chunk_lines=4, shard=(k, 2))
    before = {p.name: p.read_bytes() for p in out.glob("part-*")}
    embed_file(allennlp_bilm, inputs, out, output_format="parquet", chunk_lines=4, shard=(1, 2), overwrite=True)
    assert sorted(p.name for p in out.glob("part-*")) == sorted(before)
    theirs = [name for name in before if ("part-00000" in name if several else "shard-0-of-2" in name)]
    assert theirs and all((out / name).read_bytes() == before[name] for name in theirs)
