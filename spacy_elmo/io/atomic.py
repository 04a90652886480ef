"""Atomic file writes: a file appears under its name complete, or not at all.

Every writer of a file that a crash must not leave half-written (checkpoints,
native models, the tokenized-corpus cache, `embed`'s dump) writes beside it
and commits:

    with atomic_path(path) as tmp:
        write_something(tmp)          # any writer that takes a path

`commit` flushes the file's data to disk (fsync), renames it over the target
(atomic on POSIX within a file system) and flushes the directory entry, so
after a power loss the target is the old file or the new one. On an error
inside the block the temporary file is removed and the target is untouched.
A process killed mid-write leaves only the hidden `.NAME.PID-TOKEN.tmp` behind.
"""
import os
import secrets
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Union

PathLike = Union[str, Path]


# with the PID, a token of this process: processes of two containers (PID namespaces) sharing a cache
# directory can have the same PID, and wrote one temporary file ("No such file" at the second commit)
_PROCESS = {"token": secrets.token_hex(4)}


def _new_token_in_child() -> None:
    _PROCESS["token"] = secrets.token_hex(4)


os.register_at_fork(after_in_child=_new_token_in_child)


def temporary_path(path: PathLike) -> Path:
    """The hidden name beside `path` that this process writes before committing."""
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}-{_PROCESS['token']}.tmp")


@contextmanager
def atomic_path(path: PathLike) -> Iterator[Path]:
    """Yield a temporary path to write; on leaving the block, commit it to `path`."""
    path = Path(path)
    tmp = temporary_path(path)
    try:
        yield tmp
        # the permissions open() would give: some writers (safetensors) create private files
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        commit(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def commit(written: PathLike, path: PathLike) -> None:
    """Make a finished file durable and give it its final name: fsync, rename, fsync the directory."""
    written, path = Path(written), Path(path)
    fsync(written, os.O_RDONLY)
    os.replace(written, path)
    try:
        fsync(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        pass  # directories cannot be opened or synced everywhere (Windows); the rename stands


def fsync(path: Path, flags: int) -> None:
    """Flush a file (or, with O_DIRECTORY, a directory entry) to disk."""
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


__all__ = ["atomic_path", "commit", "temporary_path", "fsync"]
