"""Regression: runs sharing the on-disk caches at the same time, as the docs invite.

Two runs building one teacher cache (`[training.distill] cache`) wrote into one `.KEY.partial`
directory unlocked: the second opened the vectors with `w+`, truncating the rows the first had
written (the first then committed zero vectors, reused by every later run), or renamed the directory
away under the first (`keys.npy`: no such file, exit 1). And `atomic_path`'s temporary file was
named from the PID alone, so two runs in two containers (PID namespaces) sharing `[paths] cache`
wrote one temporary file, and the second commit failed.
"""
import os
import sys
import threading

import numpy
import pytest

from spacy_elmo.io import atomic
from spacy_elmo.pretrain import teacher_cache
from spacy_elmo.pretrain.text_corpus import TokenizedCorpus

from .watched_stderr import HANG, WatchedStderr

pytest.importorskip("transformers", reason="distillation needs transformers (the distill extra)")

from spacy_elmo.pretrain.distill import Teacher  # noqa: E402


def _vectors(cache) -> numpy.ndarray:
    return numpy.asarray(numpy.memmap(cache.directory / "vectors.f16", dtype=numpy.float16, mode="r"))


def test_a_second_build_waits_for_the_first_and_reads_its_cache(teacher_dir, small_corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(teacher_cache, "BATCH_TOKENS", 256)  # several batches from the small corpus
    corpus = TokenizedCorpus.prepare(small_corpus, tmp_path / "corpus-cache", progress=False)

    def build(teacher: Teacher, root):
        return teacher_cache.build_cache(teacher, corpus.segments, corpus.info, root, dim=0, progress=False)

    alone = build(Teacher(teacher_dir), tmp_path / "alone")
    first_batch_written, go_on, second_waits_or_ended = threading.Event(), threading.Event(), threading.Event()

    class Held(Teacher):
        """The first run's teacher: it stops before its second batch (its first batch written) until told."""
        calls = 0

        def token_vectors(self, segments):
            Held.calls += 1
            if Held.calls == 2:
                first_batch_written.set()
                assert go_on.wait(HANG), "never told to go on"
            return super().token_vectors(segments)

    monkeypatch.setattr(sys, "stderr", WatchedStderr(second_waits_or_ended, "another run is building"))
    results, errors = {}, {}

    def run(name, teacher):
        try:
            results[name] = build(teacher, tmp_path / "shared")
        except Exception as err:  # noqa: BLE001 -- reported by the assertion below
            errors[name] = err
        finally:
            # an error (or a build that never reaches a second batch) ends the test through `errors` and
            # the assertions below, never a wait without end
            (second_waits_or_ended if name == "second" else first_batch_written).set()

    first = threading.Thread(target=run, args=("first", Held(teacher_dir)), name="first")
    first.start()
    assert first_batch_written.wait(HANG)
    second = threading.Thread(target=run, args=("second", Teacher(teacher_dir)), name="second")
    second.start()
    assert second_waits_or_ended.wait(HANG)  # the second run waits for the lock (or, unlocked, built its own)
    go_on.set()
    for thread in (first, second):
        thread.join(HANG)
        assert not thread.is_alive(), f"the {thread.name} build hangs"
    assert not errors and Held.calls >= 2, (errors, Held.calls)
    assert results["first"].directory == results["second"].directory
    numpy.testing.assert_array_equal(_vectors(results["second"]), _vectors(alone))  # no zeroed rows


def test_a_temporary_file_is_this_process_s_even_at_an_equal_pid(tmp_path, monkeypatch):
    """Two containers' processes may have one PID: the name holds a token of the process too."""
    monkeypatch.setattr(os, "getpid", lambda: 2)
    target = tmp_path / "segments.txt.gz"
    ours = atomic.temporary_path(target)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover -- the child reports through the pipe and exits at once
        os.write(write, str(atomic.temporary_path(target)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        theirs = pipe.read()
    os.waitpid(child, 0)
    assert theirs != str(ours) and ours.name.startswith(".segments.txt.gz.2-") and ours.suffix == ".tmp"
    assert atomic.temporary_path(target) == ours  # one name per path within a process
