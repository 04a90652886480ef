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

Files that belong together are written with `staged_files`: all of them to
their temporary names first, then renamed, so that a save over an older one
failing partway (a full disk) leaves the older one whole.
"""
import os
import re
import secrets
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, List, Tuple, Union

PathLike = Union[str, Path]


# with the PID, a token of this process: processes of two containers (PID namespaces) sharing a cache
# directory can have the same PID, and wrote one temporary file ("No such file" at the second commit)
_PROCESS = {"token": secrets.token_hex(4)}


def _new_token_in_child() -> None:
    _PROCESS["token"] = secrets.token_hex(4)


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_new_token_in_child)


def temporary_path(path: PathLike) -> Path:
    """The hidden name beside `path` that this process writes before committing."""
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}-{_PROCESS['token']}.tmp")


_TEMPORARY = re.compile(r"^\..+\.(\d+)-([0-9a-f]{8})\.tmp$")


def remove_abandoned_temporaries(folders: Iterable[PathLike]) -> List[Path]:
    """Remove the temporary files (`temporary_path`) that writers killed mid-write left in `folders`:
    a checkpoint's or a model file's, as large as it, never used again, and copied along with a
    model-best. Only for a caller that holds the lock of the run writing there (no other writer is
    alive); this process's own are kept. Returns what was removed."""
    removed = []
    for folder in map(Path, folders):
        try:
            names = os.listdir(folder)
        except OSError:  # not there (yet)
            continue
        for name in names:
            match = _TEMPORARY.match(name)
            if match and (int(match.group(1)), match.group(2)) != (os.getpid(), _PROCESS["token"]):
                try:
                    (folder / name).unlink()
                    removed.append(folder / name)
                except OSError:
                    pass
    return removed


@contextmanager
def atomic_path(path: PathLike) -> Iterator[Path]:
    """Yield a temporary path to write; on leaving the block, commit it to `path`."""
    path = Path(path)
    tmp = temporary_path(path)
    try:
        yield tmp
        _usual_permissions(tmp)
        commit(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


class StagedFiles:
    """The files of one save, written under temporary names (`write`), and the files it drops (`remove`)."""

    def __init__(self) -> None:
        self.written: List[Tuple[Path, Path]] = []
        self.removed: List[Path] = []

    def write(self, path: PathLike, writer: Callable[[Path], Any]) -> Path:
        """Call `writer` on the temporary name of `path` and return that name (to read back, say for a
        checksum, before the commit)."""
        tmp = temporary_path(path)
        self.written.append((tmp, Path(path)))
        try:
            writer(tmp)
        except OSError as err:  # named by the file it was for, not the hidden temporary one
            if err.filename is None or Path(err.filename) == tmp:
                err.filename = str(path)
            raise
        return tmp

    def remove(self, path: PathLike) -> None:
        self.removed.append(Path(path))


@contextmanager
def staged_files() -> Iterator[StagedFiles]:
    """Several files that belong together (a model's weights, vocabulary and metadata), each written to
    its temporary name in the block, then all renamed over their targets in the order written, then the
    removed ones deleted. A failure while writing (a full disk) leaves every old file as it was: a model
    saved over another is the old one whole, or the new one. Only a crash amid the renames, which take
    microseconds, could mix them, and checksums recorded with the files find that."""
    stage = StagedFiles()
    try:
        yield stage
        for tmp, _ in stage.written:
            _usual_permissions(tmp)
            fsync(tmp, os.O_RDONLY)
        for tmp, path in stage.written:
            os.replace(tmp, path)
        for path in stage.removed:
            path.unlink(missing_ok=True)
        for directory in {path.parent for _, path in stage.written}:
            _fsync_directory(directory)
    finally:
        for tmp, _ in stage.written:
            if tmp.exists():
                tmp.unlink()


def _usual_permissions(path: Path) -> None:
    """The permissions open() would give: some writers (safetensors) create private files."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


def commit(written: PathLike, path: PathLike) -> None:
    """Make a finished file durable and give it its final name: fsync, rename, fsync the directory."""
    written, path = Path(written), Path(path)
    fsync(written, os.O_RDONLY)
    os.replace(written, path)
    _fsync_directory(path.parent)


def fsync_tree(root: PathLike) -> None:
    """Flush every file under `root` and every directory entry of it (`root`'s too) to disk: a folder
    written whole (a training checkpoint) that is then renamed into place is, after a power loss, the
    old folder or the complete new one, never new names over files whose data never reached the disk."""
    root = Path(root)
    for folder, _, files in os.walk(root, topdown=False):
        for name in files:
            fsync(Path(folder) / name, os.O_RDONLY)
        _fsync_directory(Path(folder))


def fsync_directory(directory: PathLike) -> None:
    """Flush a directory's entries (a rename inside it) to disk, where the platform can."""
    _fsync_directory(Path(directory))


def _fsync_directory(directory: Path) -> None:
    try:
        fsync(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        pass  # directories cannot be opened or synced everywhere (Windows); the rename stands


def fsync(path: Path, flags: int) -> None:
    """Flush a file (or, with O_DIRECTORY, a directory entry) to disk."""
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


__all__ = ["StagedFiles", "atomic_path", "commit", "fsync", "fsync_directory", "fsync_tree", "staged_files",
           "remove_abandoned_temporaries", "temporary_path"]
