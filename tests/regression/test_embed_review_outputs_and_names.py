"""Regression: a review of `embed` found outputs replaced or mixed, and inputs it could not name.

- An HDF5 OUTPUT at a URL was written locally and uploaded over the remote file without --overwrite
  (the local checks never saw the remote one): refused now, as a local one is.
- Parquet shards written with other settings (another --precision, model, tokenizer) went into one
  directory without a word: a shard now checks its siblings' record.
- A file named with a glob's characters ("data[1].txt") was read as a glob, matched nothing, and was
  reported missing.
- Parquet output crashed with a traceback on an input file name that is not UTF-8.
- An OUTPUT that is a directory, or in a folder that does not exist, was found after the model was
  loaded (a download, for a URL --weights), though the docs say before.
- A JSONL record with a \\r in it (JSON whitespace) was split there, and refused as not JSON.
"""
import os

import fsspec
import pytest

from spacy_elmo.cli import app
from spacy_elmo.embedding.dump import DumpError, embed_file, read_dump

from ..cli.invoke import flat, runner

pq = pytest.importorskip("pyarrow.parquet")


@pytest.fixture
def text(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("The cat sat .\na dog ran off\n", encoding="utf-8")
    return path


def test_a_remote_hdf5_output_that_exists_is_refused(allennlp_bilm, text):
    url = "memory://embed-review-remote/out.hdf5"
    embed_file(allennlp_bilm, str(text), url)
    memory = fsspec.filesystem("memory")
    before = memory.cat_file("/embed-review-remote/out.hdf5")
    with pytest.raises(DumpError, match="exists; pass --overwrite"):
        embed_file(allennlp_bilm, str(text), url)
    assert memory.cat_file("/embed-review-remote/out.hdf5") == before
    embed_file(allennlp_bilm, str(text), url, overwrite=True)
    memory.rm("/embed-review-remote", recursive=True)


def test_parquet_shards_of_other_settings_do_not_mix(allennlp_bilm, text, tmp_path):
    out = tmp_path / "parts"
    embed_file(allennlp_bilm, str(text), str(out), output_format="parquet", shard=(0, 2))
    with pytest.raises(DumpError, match="precision"):
        embed_file(allennlp_bilm, str(text), str(out), output_format="parquet", shard=(1, 2), precision="bfloat16")
    with pytest.raises(DumpError, match="precision"):  # --overwrite replaces this shard's parts only (a second look)
        embed_file(allennlp_bilm, str(text), str(out), output_format="parquet", shard=(1, 2), precision="bfloat16",
                   overwrite=True)
    embed_file(allennlp_bilm, str(text), str(out), output_format="parquet", shard=(1, 2))
    assert sorted(pq.read_table(out).column("key").to_pylist()) == ["0", "1"]


def test_a_file_named_like_a_glob_is_that_file(allennlp_bilm, text, tmp_path):
    named = tmp_path / "data[1].txt"
    named.write_bytes(text.read_bytes())
    embed_file(allennlp_bilm, str(named), str(tmp_path / "out.hdf5"))
    index, handle = read_dump(tmp_path / "out.hdf5")
    with handle:
        assert sorted(index.values()) == ["0", "1"]


def test_a_remote_file_named_like_a_glob_is_that_file(allennlp_bilm, text, tmp_path):
    memory = fsspec.filesystem("memory")
    memory.pipe_file("/embed-review-glob/data[1].txt", text.read_bytes())
    try:
        embed_file(allennlp_bilm, "memory://embed-review-glob/data[1].txt", str(tmp_path / "out.hdf5"))
    finally:
        memory.rm("/embed-review-glob", recursive=True)
    index, handle = read_dump(tmp_path / "out.hdf5")
    with handle:
        assert sorted(index.values()) == ["0", "1"]


@pytest.mark.skipif(os.name == "nt", reason="POSIX file names are bytes")
def test_parquet_names_a_file_whose_name_is_not_utf8(allennlp_bilm, text, tmp_path):
    odd = os.path.join(os.fsencode(tmp_path), b"caf\xe9.txt")
    with open(odd, "wb") as handle:
        handle.write(text.read_bytes())
    out = tmp_path / "parts"
    embed_file(allennlp_bilm, os.fsdecode(odd), str(out), output_format="parquet")
    files = set(pq.read_table(out).column("file").to_pylist())
    assert len(files) == 1 and next(iter(files)).endswith("caf\\xe9.txt")


def test_a_bad_output_is_found_before_the_model_is_loaded(text, tmp_path):
    (tmp_path / "adir").mkdir()
    missing_model = str(tmp_path / "no-such-model")  # loading it would fail: the output is found first
    for output, expected in ((tmp_path / "adir", "is a directory"),
                             (tmp_path / "no-folder" / "out.hdf5", "no such directory")):
        for engine in ("local", "ray"):
            result = runner.invoke(app, ["embed", str(text), str(output), "--weights", missing_model, "-q",
                                         "--engine", engine])
            assert result.exit_code == 1 and expected in flat(result), (engine, flat(result))


def test_a_jsonl_record_with_a_carriage_return_inside_is_one_record(allennlp_bilm, tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"tokens": ["a", "b"],\r "text": "a b"}\r\n{"tokens": ["c"]}\n')
    embed_file(allennlp_bilm, str(path), str(tmp_path / "out.hdf5"))
    index, handle = read_dump(tmp_path / "out.hdf5")
    with handle:
        assert sorted(index.values()) == ["0", "1"] and handle["0"].shape[1] == 2
