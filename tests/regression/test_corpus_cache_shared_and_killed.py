"""Regression: the tokenized-corpus cache when a run is killed while tokenizing, or two runs start together.

A run killed mid-tokenize left its hidden `.segments.txt.gz.PID-TOKEN.tmp` (as large as the tokenized
corpus) in the cache entry for good: nothing ever removed it. And two runs started together on one
`[paths] cache` each tokenized the whole corpus. An entry is now tokenized under a file lock: one run
tokenizes, the others wait and read its cache; a temporary file untouched for an hour is deleted.

A second look found that the first version of this fix deleted every temporary file it found under
the lock, which a lock holding on one machine only (a cache shared over NFS or FUSE) let it do to
another machine's run mid-write; and that with filelock 3 on a file system without flock (NFS without
a lock daemon: ENOLCK) the lock waited for ever, saying another run was tokenizing.
"""
import os
import sys
import threading

from spacy_elmo.pretrain import text_corpus
from spacy_elmo.pretrain.text_corpus import TokenizedCorpus

from .watched_stderr import HANG, WatchedStderr


def test_what_a_killed_run_left_is_removed_and_the_cache_is_complete(small_corpus, tmp_path):
    cache = tmp_path / "cache"
    child = os.fork()
    if child == 0:  # pragma: no cover -- killed (os._exit) partway through its corpus, as by SIGKILL
        tokenized = text_corpus._tokenized_lines

        def dying(*args, **kwargs):
            for n, tokens in enumerate(tokenized(*args, **kwargs)):
                if n == 20:
                    os._exit(0)
                yield tokens

        text_corpus._tokenized_lines = dying
        TokenizedCorpus.prepare(small_corpus, cache, progress=False)
        os._exit(1)
    os.waitpid(child, 0)
    (entry,) = [p for p in cache.iterdir() if p.is_dir()]
    (left,) = entry.glob(".segments.txt.gz.*.tmp")

    corpus = TokenizedCorpus.prepare(small_corpus, cache, progress=False)
    # a recent temporary file may be another machine's run writing (a lock that holds on one machine only)
    assert left.exists()
    os.utime(left, (left.stat().st_atime, left.stat().st_mtime - text_corpus.ABANDONED_AFTER_S - 1))
    corpus = TokenizedCorpus.prepare(small_corpus, cache, progress=False)  # an hour later: abandoned
    assert corpus.cache_file.parent == entry
    assert sorted(p.name for p in entry.iterdir()) == ["counts.json.gz", "info.json", "segments.txt.gz"]
    alone = TokenizedCorpus.prepare(small_corpus, tmp_path / "alone", progress=False)
    assert list(corpus.segments()) == list(alone.segments()) and corpus.info["tokens"] == alone.info["tokens"]
    assert not list(cache.glob(".*.lock"))  # the lock file goes once the entry is complete


def test_a_second_run_waits_for_the_first_and_reads_its_cache(small_corpus, tmp_path, monkeypatch):
    tokenized = text_corpus._tokenized_lines
    calls = []
    started, second_waits_or_ended = threading.Event(), threading.Event()

    def held(*args, **kwargs):
        """The first run's tokenizer stops after its first line until the second run waits (or ended)."""
        calls.append(threading.current_thread().name)
        for n, tokens in enumerate(tokenized(*args, **kwargs)):
            if n == 1 and len(calls) == 1:
                started.set()
                assert second_waits_or_ended.wait(HANG), "the second run neither waited nor ended"
            yield tokens

    monkeypatch.setattr(text_corpus, "_tokenized_lines", held)
    monkeypatch.setattr(sys, "stderr", WatchedStderr(second_waits_or_ended, "another run is tokenizing"))
    results, errors = {}, {}

    def run(name):
        try:
            results[name] = TokenizedCorpus.prepare(small_corpus, tmp_path / "shared", progress=False)
        except Exception as err:  # noqa: BLE001 -- reported by the assertion below
            errors[name] = err
        finally:
            # an error before the hand-over ends the test through `errors`, never a wait without end
            (second_waits_or_ended if name == "second" else started).set()

    first = threading.Thread(target=run, args=("first",), name="first")
    first.start()
    assert started.wait(HANG)
    second = threading.Thread(target=run, args=("second",), name="second")
    second.start()
    for thread in (first, second):
        thread.join(HANG)
        assert not thread.is_alive(), f"the {thread.name} run hangs"
    assert not errors
    assert calls == ["first"]  # tokenized once
    assert results["second"].info == results["first"].info
    assert list(results["second"].segments()) == list(results["first"].segments())


def test_where_flock_fails_the_corpus_is_tokenized_unlocked(small_corpus, tmp_path, monkeypatch, capsys):
    import errno
    import fcntl

    def no_locks(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    class FileLock3:
        """filelock 3 on such a file system: every try fails as if another process held the lock."""

        def __init__(self, path):
            pass

        def acquire(self, timeout=-1):
            import filelock

            if timeout == 0:
                raise filelock.Timeout("lock")
            raise AssertionError("would wait for ever")

    import filelock

    monkeypatch.setattr(fcntl, "flock", no_locks)
    monkeypatch.setattr(filelock, "FileLock", FileLock3)
    corpus = TokenizedCorpus.prepare(small_corpus, tmp_path / "cache", progress=False)
    assert corpus.n_tokens > 0 and "waiting" not in capsys.readouterr().err


def test_the_lock_probe_tells_held_from_broken(tmp_path):
    """Held by another process: it works (the caller waits); ENOLCK-like failures: it does not."""
    import fcntl

    from spacy_elmo.io import file_lock

    path = tmp_path / ".x.lock"
    assert file_lock._locks_work(path)
    to_parent, to_child = os.pipe(), os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover -- holds the lock until the parent has asked
        fd = os.open(path, os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(to_parent[1], b"1")
        os.read(to_child[0], 1)
        os._exit(0)
    assert os.read(to_parent[0], 1) == b"1"
    try:
        assert file_lock._locks_work(path)  # held elsewhere, so locks work here
    finally:
        os.write(to_child[1], b"1")
        os.waitpid(child, 0)
        for fd in (*to_parent, *to_child):
            os.close(fd)
