"""One way to name a model: a directory, an archive, a URL or a catalogue name.

`resolve_source(source)` turns any of these into a local directory that
`load_model` reads:

- a directory of any supported layout: returned as it is;
- a `.zip` or `.tar(.gz|.bz2|.xz)` file holding a model directory (at its top
  or one or more folders down): unpacked once into the cache;
- an `http(s)://` URL of such an archive, or AllenNLP's pair of files as one
  string `"OPTIONS_URL WEIGHTS_URL"` (whitespace between them; a comma is
  accepted too; in Python also a tuple `(options_url, weights_url)`):
  fetched once into the cache;
- a name from the catalogue (`python -m spacy_elmo info --list`), e.g.
  `small`, `efml-zh`, `nlpl-210`: its URLs, fetched the same way;
- the name of an installed spaCy pipeline package (`spacy package`, then
  `pip install`), e.g. `en_elmo_tagger`: its pipeline folder, read in place.

A local path wins over a catalogue name of the same spelling, and a
catalogue name over a package.

The cache is `$SPACY_ELMO_CACHE`, else the user cache directory
(`pooch.os_cache("spacy-elmo")`); a model lives in `models/KEY/`, KEY
derived from its URLs (a catalogue name and its URL share one entry) or from
the archive's path, size and modification time. What lands there is trusted
only once complete: files are fetched (pooch) and unpacked into a hidden
`.partial-*` sibling, checked against the published sha256 where there is
one, loaded with `load_model` (it must load), marked (the marker records
each file's size, modification time and sha256), and only then renamed into
place. Each later use of an entry checks its files against the marker
cheaply (`cache_records.check_entry`: a missing file or a changed size
fails; a file whose modification time changed is hashed); `download` hashes
every file. One process fetches an entry at a time (a lock in
`locks/KEY.lock`); another that wants it waits, then uses it. A dead
network, a truncated or corrupted file, a wrong checksum, an archive
member that would land outside the model directory (absolute path, `..`, a
link, a device) or is sparse, or an archive of more than 10,000 members or
that unpacks to over 100 times its size is one `WeightsError` naming the URL
or file, and leaves no entry
behind. A full disk or a cache folder that cannot be written is the cache's
error, not the download's. Once cached, a model resolves without the
network, so a copied cache directory serves machines that run offline.
"""
import errno
import hashlib
import json
import logging
import os
import re
import shutil
import stat
import sys
import tarfile
import tempfile
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Iterator, List, Optional, Sequence, Tuple, Union
from urllib.parse import unquote, urlparse

from .atomic import fsync, fsync_directory
from .catalogue import CatalogueFile, lookup
from .cache_records import MARKER, check_entry, damaged_entry_hint, record_contents
from .checksum import sha256_file
from .errors import WRITE_ERRNOS, DamagedFileError, WeightsError
from .file_lock import waiting_lock
from .installed import installed_pipeline
from ..progress_bars import is_interactive, progress_bar

CACHE_ENV = "SPACY_ELMO_CACHE"
DOWNLOAD_TIMEOUT = 60  # seconds without data before a download is given up
_ARCHIVE_SUFFIX = re.compile(r"\.(zip|tar|tgz|tar\.gz|tar\.bz2|tbz2|tar\.xz|txz)$", re.IGNORECASE)
_NOT_FOUND_HINT = "`python -m spacy_elmo info --list` lists the catalogue names"
_SPACE_ERRNOS = frozenset(code for code in (errno.ENOSPC, getattr(errno, "EDQUOT", None)) if code is not None)

SourceLike = Union[str, "os.PathLike[str]", Sequence[str]]


@dataclass(frozen=True)
class Source:
    """What a source string names: a local `directory` or `archive` (in `path`), or `remote` files.

    Any other existing local path is a `directory` too, so that the loader
    reading it reports what is wrong with it.
    """

    kind: str
    label: str
    path: Optional[Path] = None
    files: Tuple[CatalogueFile, ...] = ()
    name: Optional[str] = None
    installed: bool = False  # a directory found as an installed pipeline package's

    @property
    def is_pair(self) -> bool:
        return self.kind == "remote" and len(self.files) == 2


def cache_dir() -> Path:
    """Where downloads go: `$SPACY_ELMO_CACHE`, else the platform's user cache directory."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    import pooch

    return Path(pooch.os_cache("spacy-elmo"))


def is_http_url(text: str) -> bool:
    """Whether a model source is an http(s) URL (fetched with pooch). Not `embedding.inputs.is_url`,
    which asks whether an input file is any remote fsspec URL (s3://, gs://, ...)."""
    return re.match(r"^https?://\S+$", text, re.IGNORECASE) is not None


@contextmanager
def fetch_again_hint(source: SourceLike, resolved: Path) -> Iterator[None]:
    """Around reading the directory `source` resolved to: a DamagedFileError of a cached download (an
    archive, URL or catalogue name) names the command that fetches it again; a local directory's is
    left as it is (there is nothing to fetch)."""
    try:
        yield
    except DamagedFileError as err:
        parsed = parse_source(source)
        if parsed.kind == "directory":
            raise
        raise DamagedFileError(f"{err} ({damaged_entry_hint(parsed.label, resolved)})") from None


def parse_source(source: SourceLike) -> Source:
    """Say what `source` names, without touching the network or the cache."""
    if source is None:
        raise WeightsError("no model given: expected a directory, an archive, a URL or a catalogue name")
    if isinstance(source, (tuple, list)):
        return _remote_pair([str(part) for part in source], label=" ".join(map(str, source)))
    from_path = isinstance(source, os.PathLike)
    text = os.fspath(source) if isinstance(source, os.PathLike) else str(source)
    if not (from_path or os.path.lexists(os.path.expanduser(text))):
        # spaces around a URL, a name or a path pasted from elsewhere; never around a file or folder
        # whose name has them ("x " and "x" may both exist: the one named is the one read)
        text = text.strip()
    parts = [part for part in re.split(r"[\s,]+(?=https?://)|\s+", text) if part]
    if not from_path and len(parts) > 1 and any(is_http_url(part) for part in parts):
        return _remote_pair(parts, label=text)
    if not from_path and is_http_url(text):
        return Source("remote", text, files=(CatalogueFile(text),))
    if not text.strip():  # Path("") is the working directory: an unset variable must not load what is there
        raise WeightsError(
            "empty model source: expected a directory, an archive, a URL or a catalogue name "
            "(None, not an empty string, means the embedded English model)"
        )
    path = Path(text).expanduser()
    if path.is_dir():
        return Source("directory", str(path), path=path)
    if path.is_file():
        if _is_archive(path) or _ARCHIVE_SUFFIX.search(path.name):
            return Source("archive", str(path), path=path)
        return Source("directory", str(path), path=path)  # not a model: the loader says why
    entry = lookup(text)
    if entry is not None:
        return Source("remote", entry.name, files=entry.files, name=entry.name)
    package = installed_pipeline(text)
    if package is not None:
        return Source("directory", text, path=package, installed=True)
    raise WeightsError(
        f"{text}: no such directory, archive, URL, catalogue name or installed pipeline package ({_NOT_FOUND_HINT})"
    )


def _remote_pair(parts: Sequence[str], label: str) -> Source:
    if len(parts) != 2 or not all(is_http_url(part) for part in parts):
        raise WeightsError(
            f"{label}: expected one URL of an archive, or two URLs 'OPTIONS_URL WEIGHTS_URL' "
            "(options.json, then weights .hdf5)"
        )
    first, second = parts
    if _url_name(first).lower().endswith(".hdf5") and _url_name(second).lower().endswith(".json"):
        first, second = second, first  # given as weights, options
    return Source("remote", label, files=(CatalogueFile(first), CatalogueFile(second)))


def resolve_source(
    source: SourceLike, *, cache: Optional[Union[str, Path]] = None, progress: bool = True, refresh: bool = False
) -> Path:
    """A local directory holding the model `source` names; fetched or unpacked into the cache first if needed.

    A local path that is not an archive is returned as it is (a file there is
    for `load_model` to refuse).

    `cache` overrides `$SPACY_ELMO_CACHE`; `progress` shows a progress bar
    on stderr while downloading, where stderr is a terminal or a notebook's;
    `refresh` fetches (or unpacks) it again even where the cache has it,
    replacing the entry once the new copy loads (a damaged entry's remedy).
    Raises `WeightsError` for anything that cannot give a loadable model.
    """
    parsed = parse_source(source)
    if parsed.kind == "directory":
        assert parsed.path is not None
        return parsed.path
    root = _cache_root(cache)
    target = root / "models" / cache_key(parsed)
    damaged: Optional[WeightsError] = None
    if _complete(target) and not refresh:
        try:
            check_entry(target, parsed.label)
            return target
        except WeightsError as err:
            # perhaps `download --force` is replacing the entry this moment (its files move aside
            # while the new ones go in, under the entry's lock): look again once the lock is free
            damaged = err
    try:
        locks = _locks_folder(target)
    except WeightsError:
        if damaged is not None:  # a read-only cache: the entry's own fault is what the user can act on
            raise damaged from None
        raise
    with _entry_lock(locks, target, parsed.label):
        if _complete(target) and not refresh:
            check_entry(target, parsed.label)
            return target  # another process fetched it while this one waited for the lock
        return _fetch(parsed, target, progress, refresh)


def cached_path(source: SourceLike, *, cache: Optional[Union[str, Path]] = None) -> Optional[Path]:
    """Where `source` is (or would be) cached, if it is complete there; None otherwise or for a directory."""
    parsed = parse_source(source)
    if parsed.kind == "directory":
        return None
    root = _cache_root(cache)
    target = root / "models" / cache_key(parsed)
    return target if _complete(target) else None


def _cache_root(cache: Optional[Union[str, Path]]) -> Path:
    """The cache folder: `cache` where given, else $SPACY_ELMO_CACHE or the user cache directory. An
    empty `cache` is refused: Path("") is the working directory, which would fill with the cache's
    folders (an empty $SPACY_ELMO_CACHE means "unset", but a `--cache-dir ""` was asked for)."""
    if cache is None:
        return cache_dir()
    if not os.fspath(cache).strip():
        raise WeightsError("empty cache folder given: name a folder (or leave it out for $SPACY_ELMO_CACHE, else "
                           "the user cache directory)")
    return Path(cache).expanduser()


def cache_key(source: Source) -> str:
    """The cache entry's folder name: readable slug + digest of the URLs (or the archive's identity)."""
    if source.kind == "archive":
        assert source.path is not None
        status = source.path.stat()
        # the name's bytes as the file system has them (a name that is not UTF-8 has no str encoding)
        identity = os.fsencode(source.path.resolve()) + f"\n{status.st_size}\n{status.st_mtime_ns}".encode()
        slug = _strip_archive_suffix(source.path.name)
    else:
        identity = "\n".join(f.url for f in source.files).encode("utf-8")
        slug = _strip_archive_suffix(_url_name(source.files[-1].url)) or "model"
    digest = hashlib.sha256(identity).hexdigest()[:16]
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", slug).strip("._")[:60] or "model"
    return f"{slug}-{digest}"


# -- fetching into the cache ---------------------------------------------------------------


def _complete(target: Path) -> bool:
    return target.is_dir() and (target / MARKER).is_file()


def _unwritable(folder: Path, err: OSError) -> WeightsError:
    """The error for a cache folder (models/, locks/) that cannot be created or written (a full disk,
    a quota, a read-only file system, no permission), with the remedy that fits how the cache was chosen.

    Telling a user to set SPACY_ELMO_CACHE when it already names this cache would send them in circles.
    """
    reason = err.strerror or str(err)
    full = err.errno in _SPACE_ERRNOS
    configured = os.environ.get(CACHE_ENV)
    if configured and _inside(folder, Path(configured).expanduser()):
        remedy = (f"{CACHE_ENV} is set to {configured}: "
                  + ("free space there, or point it at a folder on another disk" if full
                     else "fix that folder's permissions, or point it at a writable folder"))
    elif not configured and _inside(folder, cache_dir()):
        remedy = ("free space there, or " if full else "") + f"set {CACHE_ENV} to a writable folder" + (
            " on another disk" if full else "")
    else:  # a cache given explicitly (`download --cache-dir`, `resolve_source(cache=...)`)
        remedy = ("free space there, or use a cache directory on another disk" if full
                  else "fix its permissions, or use a writable cache directory")
    return WeightsError(f"{folder}: cannot write to the model cache ({reason}); {remedy}")


def _inside(path: Path, folder: Path) -> bool:
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):
        return False


def _write_failure(err: BaseException) -> bool:
    """Whether `err` is the cache refusing a write (not the network, not a bad archive)."""
    return isinstance(err, PermissionError) or (isinstance(err, OSError) and err.errno in WRITE_ERRNOS)


def _locks_folder(target: Path) -> Path:
    """The cache's locks/ folder (made where missing) for entry `target`; a WeightsError where the cache
    refuses writes."""
    locks = target.parent.parent / "locks"
    try:
        locks.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise _unwritable(locks, err) from None
    return locks


@contextmanager
def _entry_lock(locks: Path, target: Path, label: str) -> Iterator[None]:
    """Hold `locks/KEY.lock` in the cache while fetching entry KEY, so that one process fetches and others wait.

    Without it a second loader that starts while a first one fetches (or while
    `download --force` has moved the old entry aside) would fetch the same
    files again, and could replace the entry a first loader is reading. The
    kernel drops the lock when its holder dies; where the file system has no
    locks, fetches go unlocked and the rename in `_commit` still keeps the
    entry whole.
    """
    waiting = f"{label}: another process is fetching this model into {target}; waiting for it"
    with waiting_lock(locks / f"{target.name}.lock", waiting):
        yield


def _fetch(source: Source, target: Path, progress: bool, refresh: bool = False) -> Path:
    parent = target.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".partial-{target.name}-", dir=parent))
    except OSError as err:
        raise _unwritable(parent, err) from None
    try:
        model_dir = _materialize(source, work, progress)
        _verify(model_dir, source)
        marker = {**_provenance(source), "contents": record_contents(model_dir)}
        (model_dir / MARKER).write_text(json.dumps(marker, indent=1), encoding="utf-8")
        committed = _commit(model_dir, target, source.label, refresh)
        if source.kind == "archive":
            _remove_superseded(committed, marker["archive_path"])
        return committed
    except OSError as err:  # a full disk or a folder that refuses writes: the cache's fault, not the model's
        if not _write_failure(err):
            raise
        raise _unwritable(parent, err) from None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _materialize(source: Source, work: Path, progress: bool) -> Path:
    """The model directory, complete but unverified, somewhere inside `work`."""
    if source.kind == "archive":
        assert source.path is not None
        return _unpack(source.path, work / "model", source.label)
    if source.is_pair:
        model_dir = work / "model"
        model_dir.mkdir()
        options, weights = source.files
        _download(options, model_dir / "options.json", progress)
        _download(weights, model_dir / "weights.hdf5", progress)
        return model_dir
    (archive_file,) = source.files
    downloads = work / "download"
    downloads.mkdir()
    file_name = re.sub(r"[^A-Za-z0-9._-]+", "_", _url_name(archive_file.url)).strip(".") or "archive"
    archive = _download(archive_file, downloads / file_name, progress)
    model_dir = _unpack(archive, work / "model", archive_file.url)
    archive.unlink()
    return model_dir


def _download(file: CatalogueFile, destination: Path, progress: bool) -> Path:
    """Fetch one URL with pooch into `destination`, checking its sha256 where one is known."""
    import pooch

    logger = pooch.get_logger()
    level = logger.level
    logger.setLevel(logging.WARNING)  # pooch's INFO lines (and its hint to pin a hash) are noise here
    # a bar written to a log or a pipe is a run of carriage-return frames (and a library call's output
    # nobody asked for), so only a terminal or a notebook gets one
    bar = _progress_bar(destination.name) if progress and is_interactive(sys.stderr) else None
    downloader = pooch.HTTPDownloader(progressbar=bar if bar is not None else False, timeout=DOWNLOAD_TIMEOUT)
    try:
        fetched = pooch.retrieve(
            file.url, known_hash=None, fname=destination.name, path=destination.parent, downloader=downloader
        )
    except Exception as err:
        if _write_failure(err):
            raise  # writing into the cache failed: `_fetch` reports it as the cache's error
        raise WeightsError(_download_failure(file.url, err)) from None
    finally:
        logger.setLevel(level)
        if bar is not None:
            bar.close()
    path = Path(fetched)
    if file.sha256:
        actual = sha256_file(path)
        if actual != file.sha256.lower():
            path.unlink()
            raise WeightsError(
                f"{file.url}: sha256 {actual} does not match the published {file.sha256}; "
                "the file is corrupted or was replaced, and was discarded"
            )
    return path


def _download_failure(url: str, err: Exception) -> str:
    """What went wrong fetching `url`: an HTTP status as the server gave it; for no connection (or a
    timeout), also the offline remedy, which only helps where the network is the problem."""
    import requests

    response = getattr(err, "response", None)
    if isinstance(err, requests.exceptions.HTTPError) and response is not None:
        status = f"{response.status_code} {response.reason or ''}".strip()
        return f"{url}: download failed: the server answered HTTP {status}"
    message = f"{url}: download failed ({type(err).__name__}: {err})"
    if isinstance(err, (requests.exceptions.ConnectionError, requests.exceptions.Timeout, TimeoutError)):
        message += (f"; on a machine without network, copy a cache filled by `python -m spacy_elmo download` "
                    f"and point {CACHE_ENV} at it")
    return message


def _progress_bar(name: str) -> Any:
    # total=1 until pooch sets the real one: pooch tests the bar for truth, and a tqdm of total 0 is false
    return progress_bar(desc=name, total=1, unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr, leave=True)


def _verify(model_dir: Path, source: Source) -> None:
    """The files must load as a model before they enter the cache."""
    from . import load_model  # lazy: the package imports this module

    from .native import is_native, verify_listed_files

    try:
        load_model(model_dir, with_softmax=False)
        if is_native(model_dir):  # the files a load without the softmax does not read (the softmax's)
            verify_listed_files(model_dir)
    except Exception as err:
        reason = str(err).replace(str(model_dir), "").lstrip(": /") or type(err).__name__
        files = "the archive's files" if source.kind == "archive" else "the downloaded files"
        raise WeightsError(f"{source.label}: {files} do not load as an ELMo model: {reason}") from None


def _provenance(source: Source) -> dict:
    return {
        "source": source.label,
        "name": source.name,
        "files": [{"url": f.url, "sha256": f.sha256} for f in source.files],
        "archive": str(source.path) if source.path is not None else None,
        # the archive's own path, resolved: its entry of another size or time (the archive replaced) goes
        "archive_path": str(source.path.resolve()) if source.path is not None else None,
    }


def _remove_superseded(target: Path, archive_path: str) -> None:
    """Remove the cache's other entries of the local archive at `archive_path`: unpacked from it when it
    had another size or time (an archive fetched or copied there again), they are keyed by those, so no
    source reaches them any more, and each was a full copy of a model kept for good. Each goes under
    its own entry lock, moved aside first (a rename), so a loader never finds half of one."""
    for entry in target.parent.iterdir():
        if entry == target or not _complete(entry):
            continue
        try:
            recorded = json.loads((entry / MARKER).read_text(encoding="utf-8")).get("archive_path")
        except (OSError, ValueError, AttributeError):
            continue
        if recorded != archive_path:
            continue
        with _entry_lock(target.parent.parent / "locks", entry, str(entry)):
            if not _complete(entry):
                continue
            aside = Path(tempfile.mkdtemp(prefix=f".replaced-{entry.name}-", dir=entry.parent))
            try:
                os.replace(entry, aside / "entry")
            except OSError:
                shutil.rmtree(aside, ignore_errors=True)
                continue
            shutil.rmtree(aside, ignore_errors=True)


def _commit(model_dir: Path, target: Path, label: str, refresh: bool = False) -> Path:
    """Flush the verified files and rename their directory into place (atomic within a file system).

    A complete entry already there is replaced only on `refresh`; otherwise
    another process (one without the lock) finished first, and its entry stays.
    """
    if _complete(target) and not refresh:
        return target
    for path in model_dir.rglob("*"):
        if path.is_file():
            fsync(path, os.O_RDONLY)
    if target.exists() and not _complete(target):
        shutil.rmtree(target)  # not written by this module: every entry it renames into place is marked
    elif target.exists():  # a refresh: the old entry moves aside (a rename) and goes once the new one is in
        old = Path(tempfile.mkdtemp(prefix=f".replaced-{target.name}-", dir=target.parent))
        os.replace(target, old / "entry")
        try:
            committed = _commit(model_dir, target, label)
        except BaseException:
            if not target.exists():
                os.replace(old / "entry", target)  # the new copy did not go in: the old one stays
            raise
        finally:
            if not (old / "entry").exists() or target.exists():
                shutil.rmtree(old, ignore_errors=True)
        return committed
    try:
        os.replace(model_dir, target)
    except OSError as err:
        if _complete(target):
            return target  # another process finished the same download first
        raise WeightsError(f"{label}: cannot move the verified model into {target} ({err})") from None
    fsync_directory(target.parent)  # where the platform can; the rename stands either way
    return target


# -- archives ----------------------------------------------------------------------------------


def _is_archive(path: Path) -> bool:
    return zipfile.is_zipfile(path) or _is_tarfile(path)


def _is_tarfile(path: Path) -> bool:
    try:
        return tarfile.is_tarfile(path)
    except (OSError, EOFError, tarfile.TarError):
        return False


def _unpack(archive: Path, destination: Path, label: str) -> Path:
    """Extract `archive` into `destination`; the model directory within it (descending single folders)."""
    destination.mkdir(parents=True)
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():
                    _check_member(info.filename, destination, label)
                    _check_zip_member_kind(info, label)
                _check_sizes([info.file_size for info in zf.infolist()], archive, destination, label)
                zf.extractall(destination)
        elif _is_tarfile(archive):
            with tarfile.open(archive, "r:*") as tf:
                members = list(_checked_tar_members(tf, destination, label))
                _check_sizes([member.size for member in members], archive, destination, label)
                if hasattr(tarfile, "data_filter"):
                    tf.extractall(destination, members=members, filter="data")
                else:  # Python without extraction filters: every member was checked above
                    tf.extractall(destination, members=members)
        else:
            raise WeightsError(f"{label}: not a readable .zip or .tar(.gz) archive (truncated, or not an archive)")
    except WeightsError:
        raise
    except OSError as err:
        if _write_failure(err):
            raise  # a full disk or a folder that refuses writes: `_fetch` reports it as the cache's error
        raise WeightsError(f"{label}: the archive is truncated or corrupted ({type(err).__name__}: {err})") from None
    except Exception as err:  # truncated or corrupted: BadZipFile, ReadError, EOFError, zlib.error, CRC errors
        raise WeightsError(f"{label}: the archive is truncated or corrupted ({type(err).__name__}: {err})") from None
    return _model_root(destination, label)


def _check_zip_member_kind(info: zipfile.ZipInfo, label: str) -> None:
    """Refuse a zip member that is not a plain file or folder: a symbolic link (`zip -y`), which
    extraction would write as a small file holding its target's name, or a device or pipe. Its kind is
    in the file-type bits of the Unix mode in external_attr's upper half; zips made elsewhere (and
    Python's writestr) leave them 0: a plain file."""
    kind = stat.S_IFMT(info.external_attr >> 16)
    if kind == stat.S_IFLNK:
        raise WeightsError(f"{label}: refused archive member {info.filename!r}: links are not allowed in a model")
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise WeightsError(f"{label}: refused archive member {info.filename!r}: not a file or a directory")


def _checked_tar_members(tf: tarfile.TarFile, destination: Path, label: str) -> Iterator[tarfile.TarInfo]:
    for member in tf.getmembers():
        _check_member(member.name, destination, label)
        if member.issym() or member.islnk():
            raise WeightsError(f"{label}: refused archive member {member.name!r}: links are not allowed in a model")
        if not (member.isfile() or member.isdir()):
            raise WeightsError(f"{label}: refused archive member {member.name!r}: not a file or a directory")
        if member.issparse():  # declares its size, but stores holes: no model file is one
            raise WeightsError(f"{label}: refused archive member {member.name!r}: a sparse file")
        yield member


# what an archive may unpack to: a model is a handful of files of float weights, which barely compress
MAX_MEMBERS = 10_000
MAX_EXPANSION = 100


def _check_sizes(sizes: List[int], archive: Path, destination: Path, label: str) -> None:
    """Refuse, before anything is written, an archive whose members (by the sizes they declare, which
    extraction cannot exceed) would not fit the cache's disk, or that unpacks to more than
    `MAX_EXPANSION` times its size (a decompression bomb: 1 MB became a 1 GB file, hashed and kept in
    the cache for good), or that holds more than `MAX_MEMBERS` members."""
    if len(sizes) > MAX_MEMBERS:
        raise WeightsError(
            f"{label}: refused archive: {len(sizes):,} members, more than a model has ({MAX_MEMBERS:,})"
        )
    total = sum(sizes)
    packed = archive.stat().st_size
    if total > MAX_EXPANSION * packed + 2**20:
        raise WeightsError(
            f"{label}: refused archive: its {packed:,} bytes unpack to {total:,}, more than {MAX_EXPANSION}x "
            "(model weights barely compress): not a model archive"
        )
    free = shutil.disk_usage(destination).free
    if total > free:
        needs = f"unpacking needs {total:,} bytes and the disk has {free:,} free"
        raise OSError(errno.ENOSPC, needs, str(destination))


def _check_member(name: str, destination: Path, label: str) -> None:
    """Refuse members that would be written outside `destination` (zip-slip / tar-slip)."""
    normalized = name.replace("\\", "/")
    parts = PurePosixPath(normalized).parts
    outside = (
        normalized.startswith("/")
        or re.match(r"^[A-Za-z]:", normalized) is not None
        or ".." in parts
        or not (destination / normalized).resolve().is_relative_to(destination.resolve())
    )
    if outside:
        raise WeightsError(
            f"{label}: refused archive member {name!r}: an absolute path or '..' would write outside the model"
        )


def _model_root(extracted: Path, label: str) -> Path:
    here = extracted
    for _ in range(4):
        entries = [p for p in here.iterdir() if not p.name.startswith(".") and p.name != "__MACOSX"]
        if not entries:
            raise WeightsError(f"{label}: the archive holds no files")
        if len(entries) == 1 and entries[0].is_dir():
            here = entries[0]
            continue
        break
    return here


# -- names -------------------------------------------------------------------------------------


def _url_name(url: str) -> str:
    return unquote(PurePosixPath(urlparse(url).path).name)


def _strip_archive_suffix(name: str) -> str:
    return re.sub(r"(\.tar)?\.(zip|tar|tgz|gz|bz2|xz|hdf5|json)$", "", name, flags=re.IGNORECASE)


__all__ = [
    "CACHE_ENV",
    "MARKER",
    "Source",
    "cache_dir",
    "cache_key",
    "cached_path",
    "check_entry",
    "damaged_entry_hint",
    "fetch_again_hint",
    "is_http_url",
    "parse_source",
    "resolve_source",
]
