"""One process at a time on a shared on-disk entry: a file lock that says when it waits.

The model download cache (one fetch per entry), the tokenized corpus and the teacher cache (one build
per key) are shared by every run pointed at them; the kernel drops a lock when its holder dies, so a
killed run never leaves the others waiting.
"""
import errno
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def waiting_lock(path: Path, waiting: str) -> Iterator[None]:
    """Hold the file lock `path` for the block; where another process holds it, print `waiting` (to
    stderr) and wait for it. Where the file system has no locks (no flock), the block runs unlocked:
    the callers' renames still keep their entries whole."""
    from filelock import FileLock, Timeout

    if not _locks_work(path):
        yield
        return
    lock = FileLock(str(path))
    try:
        try:
            lock.acquire(timeout=0)
        except Timeout:
            print(waiting, file=sys.stderr, flush=True)
            lock.acquire()
    except (OSError, NotImplementedError):  # NotImplementedError: filelock 3's word for "no flock here"
        yield
        return
    try:
        yield
    finally:
        lock.release()


def _locks_work(path: Path) -> bool:
    """Whether `flock` works on `path`'s file system (POSIX; elsewhere filelock's own locks are trusted).

    Asked with a shared lock that does not wait: taken (and given back at once) or refused because
    another process holds the lock, it works; any other error (ENOLCK on NFS without a lock daemon,
    ENOSYS, EOPNOTSUPP) means it does not. filelock 3 took such an error for "held by another" and
    waited for ever, saying another run was working."""
    try:
        import fcntl
    except ImportError:
        return True
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    except OSError as err:
        return err.errno in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES)
    finally:
        os.close(fd)


__all__ = ["waiting_lock"]
