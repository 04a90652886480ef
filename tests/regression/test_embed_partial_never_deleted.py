"""Regression: `embed --resume` deleted an OUTPUT.partial it could not open, without a word.

Any OSError counted as a torn file, including HDF5's file lock held by
another process, so a second `--resume` started while the first ran deleted
its file (and the two could commit each other's half-written work). Now a
run holds a lock beside OUTPUT from start to commit and a second run is
refused; a .partial held open elsewhere, or unreadable for a system reason,
stops the run and is left as it is; only a file HDF5 cannot parse is moved
aside to OUTPUT.partial.corrupt, with a warning.
"""
import fcntl
import hashlib
import os
from pathlib import Path

import h5py
import numpy
import pytest

from spacy_elmo.embedding.dump import DumpError, DumpWarning, Hdf5Sink, embed_file, lock_path, partial_path


@pytest.fixture
def text(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("The cat sat .\n\nA second line\n", encoding="utf-8")
    return path


def _interrupted(out: Path, bilm, text: Path) -> str:
    """An interrupted run's .partial holding unit 0, recorded as a run of `bilm` on `text`; its digest."""
    reference = embed_file(bilm, text, out.with_name("reference.hdf5"))
    with h5py.File(reference, "r") as f:
        record = f.attrs["run"]
    with h5py.File(partial_path(out), "w") as f:
        f.attrs["status"] = "incomplete"
        f.attrs["run"] = record
        f.create_dataset("0", data=numpy.full((3, 4, 32), 7.0, dtype="float32"))
    return hashlib.sha256(partial_path(out).read_bytes()).hexdigest()


def test_a_partial_held_open_elsewhere_stops_the_run_and_is_kept(allennlp_bilm, text, tmp_path, monkeypatch):
    monkeypatch.delenv("HDF5_USE_FILE_LOCKING", raising=False)
    out = tmp_path / "out.hdf5"
    digest = _interrupted(out, allennlp_bilm, text)
    # HDF5 takes its file lock with flock: hold one as another process's h5py.File(..., "a") would
    holder = os.open(partial_path(out), os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(DumpError, match="open in another process"):
            embed_file(allennlp_bilm, text, out, resume=True)
    finally:
        os.close(holder)
    assert hashlib.sha256(partial_path(out).read_bytes()).hexdigest() == digest
    assert not out.exists() and not lock_path(out).exists()
    embed_file(allennlp_bilm, text, out, resume=True)  # once free, it resumes: unit 0 kept
    with h5py.File(out, "r") as f:
        assert (f["0"][...] == 7.0).all() and f.attrs["status"] == "complete"


def test_a_second_run_on_the_same_output_is_refused_while_the_first_holds_it(allennlp_bilm, text, tmp_path):
    out = tmp_path / "out.hdf5"
    _interrupted(out, allennlp_bilm, text)
    first = Hdf5Sink(out, "all", (0, 1), resume=True)  # a run resuming it, not finished
    try:
        with pytest.raises(DumpError, match="being written by another run"):
            embed_file(allennlp_bilm, text, out, resume=True)
        with pytest.raises(DumpError, match="being written by another run"):
            embed_file(allennlp_bilm, text, out, overwrite=True)
    finally:
        first.close()
    with h5py.File(partial_path(out), "r") as f:  # neither run deleted or replaced it
        assert list(f.keys()) == ["0"] and (f["0"][...] == 7.0).all()
    assert not lock_path(out).exists()  # released with the run
    embed_file(allennlp_bilm, text, out, resume=True)
    assert out.exists() and not lock_path(out).exists()


def test_an_unparsable_partial_is_moved_aside_with_a_warning(allennlp_bilm, text, tmp_path):
    out = tmp_path / "out.hdf5"
    partial_path(out).write_bytes(b"\x89HDF torn by a crash")
    with pytest.warns(DumpWarning, match="moved aside"):
        embed_file(allennlp_bilm, text, out, resume=True)
    corrupt = partial_path(out).with_name("out.hdf5.partial.corrupt")
    assert corrupt.read_bytes() == b"\x89HDF torn by a crash"
    with h5py.File(out, "r") as f:
        assert f.attrs["status"] == "complete" and len([k for k in f.keys() if k.isdigit()]) == 3


def test_a_partial_unreadable_for_a_system_reason_is_kept(allennlp_bilm, text, tmp_path, monkeypatch):
    out = tmp_path / "out.hdf5"
    digest = _interrupted(out, allennlp_bilm, text)
    real = h5py.File

    def failing(name, mode="r", *args, **kwargs):
        if Path(name) == partial_path(out) and mode == "r":
            raise OSError(5, "Input/output error")
        return real(name, mode, *args, **kwargs)

    monkeypatch.setattr(h5py, "File", failing)
    with pytest.raises(DumpError, match="cannot open it to resume .*nothing was changed"):
        embed_file(allennlp_bilm, text, out, resume=True)
    assert hashlib.sha256(partial_path(out).read_bytes()).hexdigest() == digest
