"""Regression: four ways `embed` could lose or mix work (a code review, 2026-12-07).

- A unit's dataset was created by one HDF5 call and filled by a second: a Ctrl-C or a full disk
  between them left an empty (all-zero) dataset, which `--resume` counted as done, so the
  "complete" file held zeros for that unit.
- The run record left out the input formats, the tokenizer of JSONL text and an approximate
  (int8) backend: a resume under another `--lang` mixed two tokenizations in one file.
- A remote HDF5 output's local temporary copy stayed in the temporary directory after any
  failure; a failed upload left the finished file there without saying where.
- `--join` of a `file://` output looked for shard files named `file:/...` and found none.
"""
import tempfile

import fsspec
import h5py
import numpy
import pytest

from spacy_elmo.embedding.dump import DumpError, embed_file, join_shards, partial_path, read_record

from ..embedding.inputs_data import SIX_LINES as LINES
from ..embedding.inputs_data import write_text


def _arrays(path):
    with h5py.File(path, "r") as f:
        return {key: f[key][...] for key in f.keys() if key.isdigit()}


@pytest.fixture
def reference(allennlp_bilm, tmp_path):
    """The text file and the arrays an uninterrupted run writes for it."""
    text = write_text(tmp_path / "in.txt", LINES)
    embed_file(allennlp_bilm, text, tmp_path / "reference.hdf5", chunk_lines=2)
    return text, _arrays(tmp_path / "reference.hdf5")


def _fail_at_third_dataset(monkeypatch, after_create: bool):
    """The third `h5d.create` of the run is stopped: by Ctrl-C right after it (its data never
    written), or by a full disk in its write (`after_create=False`)."""
    create, calls = h5py.h5d.create, [0]

    class FailingWrite:
        def __init__(self, dataset):
            self.dataset = dataset

        def write(self, *args, **kwargs):
            raise OSError(28, "No space left on device")

    def counted(*args, **kwargs):
        dataset = create(*args, **kwargs)
        calls[0] += 1
        if calls[0] == 3:
            if after_create:
                raise KeyboardInterrupt
            return FailingWrite(dataset)
        return dataset

    monkeypatch.setattr(h5py.h5d, "create", counted)
    return lambda: monkeypatch.setattr(h5py.h5d, "create", create)


@pytest.mark.parametrize("after_create", [True, False], ids=["ctrl-c-after-create", "full-disk-in-write"])
def test_a_unit_stopped_between_create_and_write_is_embedded_again(allennlp_bilm, reference, tmp_path,
                                                                   monkeypatch, after_create):
    text, expected = reference
    out = tmp_path / "out.hdf5"
    restore = _fail_at_third_dataset(monkeypatch, after_create)
    with pytest.raises(KeyboardInterrupt if after_create else OSError):
        embed_file(allennlp_bilm, text, out, chunk_lines=2)
    restore()
    with h5py.File(partial_path(out), "r") as f:
        kept = sorted(key for key in f.keys() if key.isdigit())
    # the writer's own failure removes the dataset; an interrupt before its `try` leaves it unwritten
    assert kept == (["0", "1", "2"] if after_create else ["0", "1"])
    embed_file(allennlp_bilm, text, out, chunk_lines=2, resume=True)
    found = _arrays(out)
    assert sorted(found) == sorted(expected)
    for key, array in expected.items():
        numpy.testing.assert_array_equal(found[key], array, err_msg=f"unit {key}")
    assert numpy.abs(found["2"]).max() > 0


def test_the_record_holds_formats_and_tokenizer_and_a_resume_under_another_is_refused(
        allennlp_bilm, tmp_path, inject):
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text("".join('{"text": "Line number %d, with a comma."}\n' % i for i in range(4)), encoding="utf-8")
    out = tmp_path / "j.hdf5"
    inject("embed.chunk:1:enospc")
    with pytest.raises(OSError):
        embed_file(allennlp_bilm, jsonl, out, chunk_lines=2, lang="en")
    inject("")
    with h5py.File(partial_path(out), "r") as f:
        record = read_record(f.attrs)
    assert record["input_formats"] == ["jsonl"] and record["tokenizer"] == "lang en"
    assert record["approximate"] is False
    with pytest.raises(DumpError, match=r"tokenizer \(--lang / --pipeline\): lang en in it, lang xx in this run"):
        embed_file(allennlp_bilm, jsonl, out, chunk_lines=2, lang="xx", resume=True)
    with pytest.raises(DumpError, match="--input-format: .*jsonl.* in it, .*text.* in this run"):
        embed_file(allennlp_bilm, jsonl, out, chunk_lines=2, input_format="text", resume=True)
    embed_file(allennlp_bilm, jsonl, out, chunk_lines=2, lang="en", resume=True)
    assert len(_arrays(out)) == 4


def test_the_tokenizer_is_not_recorded_where_no_input_is_jsonl(allennlp_bilm, tmp_path):
    text = write_text(tmp_path / "in.txt", LINES[:2])
    embed_file(allennlp_bilm, text, tmp_path / "t.hdf5")
    with h5py.File(tmp_path / "t.hdf5", "r") as f:
        record = read_record(f.attrs)
    assert record["tokenizer"] is None and record["input_formats"] == ["text"]


def test_an_int8_run_is_recorded_as_approximate(allennlp_dir, tmp_path):
    from spacy_elmo.bilm.engine import unavailable_reason
    from spacy_elmo.io import load_bilm

    if unavailable_reason("int8") is not None:
        pytest.skip(f"int8: {unavailable_reason('int8')}")
    model = load_bilm(allennlp_dir)
    model.backend = "int8"
    text = write_text(tmp_path / "in.txt", LINES[:2])
    embed_file(model, text, tmp_path / "q.hdf5")
    with h5py.File(tmp_path / "q.hdf5", "r") as f:
        assert read_record(f.attrs)["approximate"] is True


@pytest.fixture
def own_tempdir(tmp_path, monkeypatch):
    where = tmp_path / "tmp"
    where.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    return where


def test_a_stopped_remote_output_leaves_no_local_copy(allennlp_bilm, tmp_path, own_tempdir, inject):
    text = write_text(tmp_path / "in.txt", LINES)
    inject("embed.chunk:1:enospc")
    with pytest.raises(OSError):
        embed_file(allennlp_bilm, text, "memory://review-remote-stop/out.hdf5", chunk_lines=2)
    inject("")
    assert list(own_tempdir.iterdir()) == []
    assert not fsspec.filesystem("memory").exists("/review-remote-stop/out.hdf5")


def test_a_failed_upload_keeps_the_finished_file_and_names_it(allennlp_bilm, tmp_path, own_tempdir, monkeypatch):
    text = write_text(tmp_path / "in.txt", LINES)
    memory = type(fsspec.filesystem("memory"))

    def refuse(self, *args, **kwargs):
        raise PermissionError("the bucket refuses writes")

    monkeypatch.setattr(memory, "put_file", refuse)
    with pytest.raises(DumpError, match="the upload failed .*PermissionError.* kept at") as caught:
        embed_file(allennlp_bilm, text, "memory://review-remote-upload/out.hdf5")
    kept = list(own_tempdir.glob("*/out.hdf5"))
    assert len(kept) == 1 and str(kept[0]) in str(caught.value)
    assert sorted(_arrays(kept[0])) == sorted(str(i) for i in range(len(LINES)))


def test_join_accepts_a_file_url_and_refuses_a_remote_one(allennlp_bilm, tmp_path):
    text = write_text(tmp_path / "in.txt", LINES)
    url = f"file://{tmp_path / 'fu.hdf5'}"
    for k in range(2):
        embed_file(allennlp_bilm, text, url, shard=(k, 2))
    assert join_shards(url, 2) == tmp_path / "fu.hdf5"
    assert len(_arrays(tmp_path / "fu.hdf5")) == len(LINES)
    with pytest.raises(DumpError, match="--join writes a local file"):
        join_shards("memory://review-join/out.hdf5", 2)
