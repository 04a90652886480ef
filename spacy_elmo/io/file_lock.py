"""One process at a time on a shared on-disk entry or output.

`waiting_lock`: a lock that says when it waits. The model download cache (one fetch per entry), the
tokenized corpus and the teacher cache (one build per key) are shared by every run pointed at them.

`RunLock`: a lock that refuses instead of waiting. A run's output (an `embed` file, a pretraining or
training folder) is one run's at a time: a second run on it (two `--resume`s a job scheduler started
at once) is refused at its start, before it writes anything, rather than mixing its files and log
with the first's.

The kernel drops a lock when its holder dies (even by SIGKILL), so a killed run never leaves the
others waiting or refused.
"""
import errno
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional, Union

from ..bilm.errors import SpacyElmoError


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


class OutputBusyError(SpacyElmoError, RuntimeError):
    """Another run holds the output this run would write."""


class RunLock:
    """An exclusive lock on one run's output, held with `flock` on the file `lock_path` from creation
    to `release` (which removes the file). A second run is refused while the first holds it: `error`
    (OutputBusyError by default) naming `target`. Where the file system has no locks (or on
    Windows), runs go unlocked."""

    def __init__(self, lock_path: Path, target: Union[str, Path],
                 error: Callable[[str], Exception] = OutputBusyError) -> None:
        self.path = Path(lock_path)
        self.fd: Optional[int] = None
        try:
            import fcntl
        except ImportError:  # not POSIX
            return
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            except OSError as err:
                raise error(f"{self.path.parent}: cannot write the output ({err.strerror or err})") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as err:
                os.close(fd)
                if err.errno in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                    raise error(f"{target} is being written by another run (it holds {self.path}); let that run "
                                "finish, or stop it, before starting this one") from None
                self.path.unlink(missing_ok=True)  # a file system without locks: nothing to hold or leave
                return
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:  # not a lock file that its holder removed while this process waited to open it
                self.fd = fd
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode("ascii"))
                return
            os.close(fd)

    def release(self) -> None:
        """Remove the lock file and drop the lock (removed first, so no other run locks a file about to go)."""
        if self.fd is None:
            return
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        os.close(self.fd)
        self.fd = None

    def __enter__(self) -> "RunLock":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def run_lock_path(output: Path, kind: str = "") -> Path:
    """The lock file of a run writing `output` (a file or a folder): hidden, beside it, so that taking
    it creates nothing inside the output; `kind` tells apart the locks of a command and of the
    script that runs it on the same output. The path is resolved first (an output "." has a name
    then, and a symlink or a `..` spelling of the same output takes the same lock)."""
    output = Path(os.path.realpath(output))
    suffix = f".{kind}" if kind else ""
    if not output.name:  # the file system's root: nothing beside it
        return output / f".spacy-elmo-run{suffix}.lock"
    return output.with_name(f".{output.name}{suffix}.lock")


def output_lock(output: Path, kind: str = "") -> RunLock:
    """The `RunLock` of a run writing `output` (its folder's parent is created where missing). Where
    that parent cannot be written but the output is a folder that exists (a writable folder in a
    read-only one: a container's bind mount), the lock goes inside the output folder instead."""
    lock = run_lock_path(output, kind)
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass  # RunLock names the folder it cannot write
    if Path(output).is_dir() and not os.access(lock.parent, os.W_OK):
        lock = Path(output) / f".spacy-elmo-run{'.' + kind if kind else ''}.lock"
    return RunLock(lock, output)


__all__ = ["waiting_lock", "OutputBusyError", "RunLock", "run_lock_path", "output_lock"]
