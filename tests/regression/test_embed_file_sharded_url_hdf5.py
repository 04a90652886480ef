"""Regression: the `embed` command refuses a sharded HDF5 output at a URL up front (its shards are
joined into one local file), but the `embed_file` Python API did not: it embedded its shard and
uploaded a shard file next to the URL, which `join_shards` (local) could never join. Both now refuse
it with the one message of `dump.check_sharded_hdf5_output`, before any input is read."""
import fsspec
import pytest

from spacy_elmo.embedding.dump import DumpError, embed_file


def test_the_api_refuses_a_sharded_url_output_before_reading(allennlp_bilm, tmp_path):
    url = "memory://sharded-url-review/out.hdf5"
    missing = str(tmp_path / "not-read.txt")  # not read: the output is refused first
    with pytest.raises(DumpError, match="must be a local path.*--format parquet"):
        embed_file(allennlp_bilm, missing, url, shard=(0, 2))
    assert not fsspec.filesystem("memory").exists("/sharded-url-review")


def test_one_shard_at_a_url_is_still_written(allennlp_bilm, tmp_path):
    """Unsharded, an HDF5 output at a URL is written (and uploaded) as before."""
    text = tmp_path / "in.txt"
    text.write_text("Hello world .\nA second line\n", encoding="utf-8")
    url = "memory://sharded-url-review-one/out.hdf5"
    embed_file(allennlp_bilm, str(text), url)
    assert fsspec.filesystem("memory").exists("/sharded-url-review-one/out.hdf5")
