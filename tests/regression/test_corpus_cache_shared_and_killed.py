"""Regression: the tokenized-corpus cache when a run is killed while tokenizing, or two runs start together.

A run killed mid-tokenize left its hidden `.segments.txt.gz.PID-TOKEN.tmp` (as large as the tokenized
corpus) in the cache entry for good: nothing ever removed it. And two runs started together on one
`[paths] cache` each tokenized the whole corpus. An entry is now tokenized under a file lock: one run
tokenizes (first deleting what a killed run left), the others wait and read its cache.
"""
import io
import os
import sys
import threading

from spacy_elmo.pretrain import text_corpus
from spacy_elmo.pretrain.text_corpus import TokenizedCorpus


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
    assert [p.name for p in entry.glob(".segments.txt.gz.*.tmp")], "the killed run left no temporary file"

    corpus = TokenizedCorpus.prepare(small_corpus, cache, progress=False)
    assert corpus.cache_file.parent == entry
    assert sorted(p.name for p in entry.iterdir()) == ["counts.json.gz", "info.json", "segments.txt.gz"]
    alone = TokenizedCorpus.prepare(small_corpus, tmp_path / "alone", progress=False)
    assert list(corpus.segments()) == list(alone.segments()) and corpus.info["tokens"] == alone.info["tokens"]
    assert not list(cache.glob(".*.lock"))  # the lock file goes once the entry is complete


class _Watched(io.StringIO):
    """stderr, setting `event` when a run says it waits for another."""

    def __init__(self, event: threading.Event) -> None:
        super().__init__()
        self.event = event

    def write(self, text: str) -> int:
        if "another run is tokenizing" in text:
            self.event.set()
        return super().write(text)


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
                second_waits_or_ended.wait()
            yield tokens

    monkeypatch.setattr(text_corpus, "_tokenized_lines", held)
    monkeypatch.setattr(sys, "stderr", _Watched(second_waits_or_ended))
    results, errors = {}, {}

    def run(name):
        try:
            results[name] = TokenizedCorpus.prepare(small_corpus, tmp_path / "shared", progress=False)
        except Exception as err:  # noqa: BLE001 -- reported by the assertion below
            errors[name] = err
        finally:
            if name == "second":
                second_waits_or_ended.set()

    first = threading.Thread(target=run, args=("first",), name="first")
    first.start()
    started.wait()
    second = threading.Thread(target=run, args=("second",), name="second")
    second.start()
    first.join()
    second.join()
    assert not errors
    assert calls == ["first"]  # tokenized once
    assert results["second"].info == results["first"].info
    assert list(results["second"].segments()) == list(results["first"].segments())
