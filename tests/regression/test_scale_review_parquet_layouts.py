"""Regression: Parquet runs of another sharding into one directory duplicated every row.

A run only looked at the parts of its own share: an unsharded run's parts (`part-00000-*.parquet`) and
then `--shard 0/2` and `--shard 1/2` of the same input (`part-00000-*-shard-K-of-2.parquet`) were all
accepted, without --resume or --overwrite, and the directory read every unit twice (100 rows for 50
lines). Parts of another sharding of the input (no suffix, another N; or suffixed parts in an unsharded
run, even with --resume) are now refused, and removed with --overwrite.
"""
import pytest

from spacy_elmo.embedding.dump import DumpError, embed_file

pytest.importorskip("pyarrow.parquet")

from spacy_elmo.embedding.parquet import read_parts  # noqa: E402

LINES = [f"line number {i} of the text ." for i in range(9)]


@pytest.fixture
def text(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return path


def _keys(out):
    return sorted((key for key, _ in read_parts(str(out))), key=int)


def _parts(out):
    return sorted(p.name for p in out.glob("part-*"))


def test_shards_into_an_unsharded_runs_directory(allennlp_bilm, text, tmp_path):
    out = tmp_path / "pq"
    embed_file(allennlp_bilm, text, out, output_format="parquet", chunk_lines=4)
    before = _parts(out)
    with pytest.raises(DumpError, match="holds 3 part.* of another sharding .*--overwrite"):
        embed_file(allennlp_bilm, text, out, output_format="parquet", chunk_lines=4, shard=(0, 2))
    with pytest.raises(DumpError, match="another sharding"):  # --resume keeps parts: no help
        embed_file(allennlp_bilm, text, out, output_format="parquet", chunk_lines=4, shard=(0, 2), resume=True)
    assert _parts(out) == before
    embed_file(allennlp_bilm, text, out, output_format="parquet", chunk_lines=4, shard=(0, 2), overwrite=True)
    assert all("-shard-0-of-2" in name for name in _parts(out))
    embed_file(allennlp_bilm, text, out, output_format="parquet", chunk_lines=4, shard=(1, 2))
    assert _keys(out) == [str(i) for i in range(len(LINES))]  # each unit once


def test_an_unsharded_run_or_another_number_of_shards_into_a_sharded_directory(allennlp_bilm, text, tmp_path):
    out = tmp_path / "pq"
    for k in range(2):
        embed_file(allennlp_bilm, text, out, output_format="parquet", chunk_lines=4, shard=(k, 2))
    for shard in ((0, 1), (0, 3)):
        for resume in (False, True):
            with pytest.raises(DumpError, match="another sharding"):
                embed_file(allennlp_bilm, text, out, output_format="parquet", chunk_lines=4, shard=shard,
                           resume=resume)
    assert _keys(out) == [str(i) for i in range(len(LINES))]
    embed_file(allennlp_bilm, text, out, output_format="parquet", chunk_lines=4, overwrite=True, resume=True)
    assert all("-shard-" not in name for name in _parts(out))
    assert _keys(out) == [str(i) for i in range(len(LINES))]
