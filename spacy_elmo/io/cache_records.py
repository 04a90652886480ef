"""What a download-cache entry recorded of its files, and the check of an entry against it.

A cache entry (`models/KEY/`, see `sources`) is verified once, when it
enters the cache: it must load. Its marker file (`MARKER`) then records
each file's size, modification time and sha256, so that damage done later
(a disk error, an edit, a deleted file) is found for every layout, not only
for native models, whose elmo.json carries checksums of its own:

- every use of the entry runs `check_entry` cheaply: one stat per file; a
  missing file or a changed size fails, and only a file whose modification
  time changed is hashed, so loading a 350 MB model costs no hash;
- `download` runs it with `full=True`: every file hashed, which also finds
  damage that kept a file's size and time.

A marker written before these records (an older spacy-elmo) has none: the
entry is used as it is, unverified.
"""
import json
from pathlib import Path, PurePosixPath
from typing import Any, Dict

from .checksum import sha256_file
from .errors import DamagedFileError, WeightsError

MARKER = ".spacy-elmo-download.json"
_FIELDS = (("size", int), ("mtime_ns", int), ("sha256", str))


def damaged_entry_hint(label: str, entry: Path) -> str:
    """What to do when a cache entry's files changed on disk after they were verified."""
    return (f"the cached copy in {entry} is damaged: `python -m spacy_elmo download \"{label}\" --force` "
            "fetches it again (or delete that directory)")


def record_contents(model_dir: Path) -> Dict[str, Dict[str, Any]]:
    """Each file of a verified model (relative POSIX path) -> its size, modification time and sha256,
    for the marker: what later checks compare the files with."""
    contents = {}
    for path in sorted(model_dir.rglob("*")):
        if path.is_file() and path.name != MARKER:
            stat = path.stat()
            contents[path.relative_to(model_dir).as_posix()] = {
                "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": sha256_file(path),
            }
    return contents


def check_entry(entry: Path, label: str, full: bool = False) -> bool:
    """Check a complete cache entry's files against what its marker recorded when it entered the cache.

    Cheap by default, as it runs on every use of the entry: a file that is
    missing or whose size changed fails at once; only a file whose
    modification time changed is hashed (an edit; or a cache copied without
    its times, which then costs a hash per use but still loads). `full`
    (`download`'s re-check) hashes every file. `label` names the source in
    the remedy. Raises `DamagedFileError` naming the file and the remedy;
    returns False where the marker records no files (an entry cached by an
    older spacy-elmo: unverified, used as it is), else True.
    """
    marker = entry / MARKER
    hint = damaged_entry_hint(label, entry)
    try:
        recorded = json.loads(marker.read_text(encoding="utf-8"))
    except OSError as err:
        raise WeightsError(f"{marker}: cannot read ({err.strerror or err})") from None
    except ValueError as err:
        raise DamagedFileError(f"{marker}: not valid JSON ({err}) ({hint})") from None
    contents = recorded.get("contents") if isinstance(recorded, dict) else None
    if contents is None:
        return False
    if not isinstance(contents, dict):
        raise DamagedFileError(f"{marker}: 'contents' is not an object ({hint})")
    for name, record in contents.items():
        _check_file(entry, name, record, full, hint)
    return True


def _check_file(entry: Path, name: str, record: Any, full: bool, hint: str) -> None:
    """One recorded file of an entry: present, its size, and its sha256 when `full` or its time changed."""
    parts = PurePosixPath(name).parts
    readable = isinstance(record, dict) and all(
        isinstance(record.get(key), kind) and not isinstance(record.get(key), bool) for key, kind in _FIELDS
    )
    if not readable or not parts or name.startswith("/") or ".." in parts:
        raise DamagedFileError(f"{entry / MARKER}: unreadable record for {name!r} ({hint})")
    path = entry.joinpath(*parts)
    try:
        stat = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        raise DamagedFileError(
            f"{path}: missing (it was part of the model when it entered the cache) ({hint})"
        ) from None
    except OSError as err:
        raise WeightsError(f"{path}: cannot read ({err.strerror or err})") from None
    if not path.is_file():
        raise DamagedFileError(f"{path}: not a file any more (it was one when it entered the cache) ({hint})")
    if stat.st_size != record["size"]:
        raise DamagedFileError(
            f"{path}: {stat.st_size} bytes, but {record['size']} when it entered the cache: the file was cut "
            f"short or replaced ({hint})"
        )
    if (full or stat.st_mtime_ns != record["mtime_ns"]) and sha256_file(path) != record["sha256"].lower():
        raise DamagedFileError(
            f"{path}: checksum mismatch (sha256 differs from the one recorded when it entered the cache): "
            f"the file is corrupted or was replaced ({hint})"
        )


__all__ = ["MARKER", "check_entry", "damaged_entry_hint", "record_contents"]
