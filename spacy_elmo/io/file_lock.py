"""One process at a time on a shared on-disk entry: a file lock that says when it waits.

The model download cache (one fetch per entry) and the teacher cache (one build per key) are shared by
every run pointed at them; the kernel drops a lock when its holder dies, so a killed run never leaves
the others waiting.
"""
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def waiting_lock(path: Path, waiting: str) -> Iterator[bool]:
    """Hold the file lock `path` for the block; where another process holds it, print `waiting` (to
    stderr) and wait for it. Where the file system has no locks (no flock), the block runs unlocked:
    the callers' renames still keep their entries whole. Yields whether the lock is held (only then
    may the block take what another writer left behind as abandoned)."""
    from filelock import FileLock, Timeout

    lock = FileLock(str(path))
    try:
        try:
            lock.acquire(timeout=0)
        except Timeout:
            print(waiting, file=sys.stderr, flush=True)
            lock.acquire()
    except OSError:
        yield False
        return
    try:
        yield True
    finally:
        lock.release()


__all__ = ["waiting_lock"]
