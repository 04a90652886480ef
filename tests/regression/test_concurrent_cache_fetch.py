"""Regression: two loaders of one URL at once fetched it twice, and the second replaced the first's entry.

`resolve_source` looked for a complete entry and, not finding one, fetched,
with nothing to tell a second process that a first was already fetching;
the second's commit then found the first's entry complete, took it for a
refresh and moved it aside while the first could be reading it. The same
happened to any loader starting while `download --force` had the old entry
moved aside. Now one process fetches an entry at a time (a lock under
`locks/` in the cache) and the others wait for it, then use its entry; and
a commit replaces a complete entry only when asked to refresh it.

The other process is a thread holding the same lock file (flock locks
belong to open files, so a second open in one process is refused the
same way); it goes on only once the waiter has said it waits.
"""
import threading

import pytest
from filelock import FileLock

from spacy_elmo.io import resolve_source
from spacy_elmo.io import file_lock, sources
from spacy_elmo.io.sources import cache_key, parse_source

from ..io.model_server import cache_entries, make_zip, published_dir, serve, tiny_bilm, use_cache


@pytest.fixture
def served_zip(tmp_path, monkeypatch):
    cache = use_cache(tmp_path, monkeypatch)
    for server in serve(tmp_path):
        make_zip(published_dir(tmp_path / "published", tiny_bilm(seed=3)), server.root / "elmo.zip")
        yield cache, server.url("elmo.zip")


def test_a_second_loader_waits_for_the_first_fetch_and_fetches_nothing(served_zip, monkeypatch):
    cache, url = served_zip
    parsed = parse_source(url)
    target = cache / "models" / cache_key(parsed)
    waiting = threading.Event()
    fetched_by = []
    real_fetch = sources._fetch

    def counting_fetch(*args, **kwargs):
        fetched_by.append(threading.current_thread().name)
        return real_fetch(*args, **kwargs)

    monkeypatch.setattr(sources, "_fetch", counting_fetch)
    monkeypatch.setattr(file_lock, "print", lambda *a, **k: waiting.set(), raising=False)
    (cache / "locks").mkdir(parents=True)
    holder = FileLock(str(cache / "locks" / f"{target.name}.lock"))
    holder.acquire()
    result = {}
    waiter = threading.Thread(name="waiter", target=lambda: result.update(path=resolve_source(url, progress=False)))
    waiter.start()
    try:
        assert waiting.wait(timeout=120), "the second loader did not wait for the lock"
        real_fetch(parsed, target, False)  # the "first process" fetches while holding the lock
    finally:
        holder.release()
        waiter.join(timeout=120)
    assert result["path"] == target
    assert fetched_by == []  # the waiter found the entry complete once it had the lock
    assert cache_entries(cache) == [target.name]


def test_a_commit_keeps_a_complete_entry_unless_refreshing(served_zip):
    cache, url = served_zip
    parsed = parse_source(url)
    first = resolve_source(url, progress=False)
    inode = first.stat().st_ino
    target = cache / "models" / cache_key(parsed)
    assert sources._fetch(parsed, target, False) == first
    assert first.stat().st_ino == inode  # a fetch that lost the race leaves the first entry in place
    assert resolve_source(url, progress=False, refresh=True) == first
    assert first.stat().st_ino != inode  # a refresh does replace it
    assert cache_entries(cache) == [target.name]
