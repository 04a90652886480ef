"""A teacher's token vectors computed once for a corpus and kept on disk (`[training.distill] cache`).

Distillation on the fly runs the teacher in every step of every run. The
cache runs it once over the training corpus and stores each token's vector
in float16, projected onto the `dim` leading principal directions of the
teacher's vectors (fitted on the corpus's first tokens, and centred on their
mean), so that 12M tokens take 3 GB at 128 dimensions instead of 9 GB at 384.
The regression target is then the projected vector. Later runs, and later
epochs of the same run, read the vectors instead of running the teacher.

A segment is found by the hash of its tokens, so the batches may group and
order segments in any way; a sentence that is not in the cache (a corpus it
was not built for) is an error, never a silent zero. Each cache lives in a
subdirectory named by a key over the teacher (its directory and a fingerprint
of its files: a teacher overwritten in place is another teacher), its layer,
its settings, the corpus and `dim`, so a changed setting builds a new one. A
build writes into a partial directory and records its progress every few
hundred segments (each record replacing the last atomically): an interrupted
build continues where it stopped (from the start, where the record cannot be
read), and only a complete one is renamed into place.

Files: `meta.json` (what it was built from), `keys.npy` (sorted 64-bit
segment hashes), `starts.npy` (each key's first row), `vectors.f16` (rows x
dim, float16, the first `meta["rows"]` used; NaN rows are tokens the teacher
did not see) and
`projection.npz` (mean and directions; absent without projection).
"""
import hashlib
import json
import os
import shutil
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy
import torch

from ..faults import fault_point
from ..progress_bars import progress_bar
from ..io.atomic import atomic_path
from ..io.file_lock import waiting_lock
from .distill import DistillError, Teacher

CACHE_VERSION = 1
FIT_TOKENS = 50_000  # teacher vectors of the corpus's first tokens that the projection is fitted on
BATCH_TOKENS = 4096  # tokens per teacher call while building
PROGRESS_EVERY = 64  # teacher calls between two progress records
HASH_BYTES = 16 << 20  # a teacher's files up to this size are fingerprinted by their contents; larger ones
# (the weights) by size and modification time, so that a 90 MB model is not read again on every run


def segment_key(tokens: Sequence[str]) -> int:
    """A segment's 64-bit key (its tokens never hold "\\n")."""
    digest = hashlib.blake2b("\n".join(tokens).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


# what the vectors depend on in a corpus cache's info; its version too: version 2 reads tokens with a space,
# and text after a byte-order mark, as other tokens than version 1 did, at the same segment and token counts
CORPUS_KEYS = ("files", "lang", "tokenizer", "max_length", "segments", "tokens", "types", "version")


def cache_key(teacher: Teacher, corpus_info: Dict[str, Any], dim: int) -> str:
    """The subdirectory name of a cache: every setting its vectors depend on."""
    wanted = {
        "version": CACHE_VERSION,
        "teacher": str(Path(teacher.directory).resolve()),
        # what is in the directory, not only its name: a teacher overwritten in place builds a new cache
        "teacher_files": teacher_fingerprint(teacher.directory),
        "layer": teacher.layer,
        "alignment": getattr(teacher, "ALIGNMENT", 1),
        "max_wordpieces": teacher.max_wordpieces,
        "precision": teacher.precision,
        "corpus": {k: corpus_info.get(k) for k in CORPUS_KEYS},
        # the files as they are now, as the corpus cache's own key has them: a file edited in place with
        # the same counts builds a new cache (the old one's vectors are another text's)
        "corpus_files": [_file_stat(name) for name in corpus_info.get("files") or []],
        "dim": dim,
    }
    return hashlib.sha1(json.dumps(wanted, sort_keys=True).encode()).hexdigest()[:16]


def _file_stat(name: str) -> Optional[List[int]]:
    """[size, modification time in ns] of a corpus file (None where it cannot be read)."""
    try:
        stat = os.stat(name)
    except OSError:
        return None
    return [stat.st_size, stat.st_mtime_ns]


def teacher_fingerprint(directory: Path) -> str:
    """A digest of a teacher directory's files (its top level, hidden files left out): the
    contents of the small ones (config.json, tokenizer.json, vocab.txt), and the size and
    modification time of those over `HASH_BYTES` (the weights)."""
    digest = hashlib.blake2b(digest_size=16)
    directory = Path(directory)
    for path in sorted(directory.iterdir()) if directory.is_dir() else []:
        if path.name.startswith(".") or not path.is_file():
            continue  # hidden files (a download's .cache/, locks) and subdirectories are no part of the model
        stat = path.stat()
        digest.update(f"{path.name}\0{stat.st_size}\0".encode("utf-8"))
        if stat.st_size <= HASH_BYTES:
            digest.update(hashlib.blake2b(path.read_bytes(), digest_size=16).digest())
        else:
            digest.update(f"{stat.st_mtime_ns}".encode())
        digest.update(b"\n")
    return digest.hexdigest()


class CachedTeacher:
    """Reads a complete cache: the same `token_vectors` as a live `Teacher`, of width `dim`."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        try:
            self.meta = json.loads((self.directory / "meta.json").read_text(encoding="utf-8"))
            self.keys = numpy.load(self.directory / "keys.npy")
            self.starts = numpy.load(self.directory / "starts.npy")
            self.dim = int(self.meta["dim"])
            # rows beyond meta["rows"] (space kept for repeated segments) are never read
            shape = (max(1, int(self.meta["rows"])), self.dim)
            # a vectors.f16 cut short: numpy's "mmap length is greater than file size"
            self.vectors = numpy.memmap(self.directory / "vectors.f16", dtype=numpy.float16, mode="r", shape=shape)
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise DistillError(f"{self.directory}: not a complete teacher cache ({err})") from None

    def token_vectors(self, sentences: Sequence[Sequence[str]]) -> Tuple[torch.Tensor, torch.Tensor]:
        """(vectors (n_tokens, dim) float32, mask (n_tokens,) bool) of the sentences' tokens, in order."""
        keys = numpy.array([segment_key(s) for s in sentences], dtype=numpy.int64)
        where = numpy.searchsorted(self.keys, keys)
        found = (where < len(self.keys)) & (self.keys[numpy.minimum(where, len(self.keys) - 1)] == keys)
        if not found.all():
            missing = list(sentences[int(numpy.argmin(found))])
            raise DistillError(
                f"teacher cache {self.directory}: no vectors for the sentence {' '.join(missing[:12])!r}: "
                "the cache was built for another corpus"
            )
        rows = numpy.concatenate(
            [numpy.arange(start, start + len(s)) for start, s in zip(self.starts[where], sentences)]
        ) if len(sentences) else numpy.zeros(0, dtype=numpy.int64)
        vectors = torch.from_numpy(self.vectors[rows].astype(numpy.float32))
        mask = ~torch.isnan(vectors[:, 0]) if len(rows) else torch.zeros(0, dtype=torch.bool)
        return torch.nan_to_num(vectors), mask


def fit_projection(vectors: torch.Tensor, dim: int) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """(mean (width,), directions (width, dim)): the `dim` leading principal directions."""
    mean = vectors.mean(0)
    centred = (vectors - mean).double()
    _, eigenvectors = torch.linalg.eigh(centred.T @ centred)
    directions = eigenvectors.flip(1)[:, :dim]  # eigh sorts ascending
    return mean.numpy(), directions.float().numpy()


def _batches(segments: Iterable[List[str]], batch_tokens: int) -> Iterator[List[List[str]]]:
    batch: List[List[str]] = []
    size = 0
    for segment in segments:
        batch.append(segment)
        size += len(segment)
        if size >= batch_tokens:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def build_cache(
    teacher: Teacher,
    segments: Callable[[], Iterable[List[str]]],
    corpus_info: Dict[str, Any],
    root: Path,
    dim: int = 128,
    progress: bool = True,
) -> CachedTeacher:
    """The complete cache of `teacher` over the corpus under `root` (built, or continued, first).

    `segments()` must stream the corpus that `corpus_info` describes (a
    `TokenizedCorpus`'s `segments` and `info`); `dim` 0 (or the teacher's width or
    more) stores the vectors unprojected.
    """
    dim = teacher.dim if dim <= 0 or dim >= teacher.dim else dim
    key = cache_key(teacher, corpus_info, dim)
    final = Path(root) / key
    if (final / "meta.json").is_file():
        return CachedTeacher(final)
    with _building(Path(root), key):
        if (final / "meta.json").is_file():  # built by the run this one waited for
            return CachedTeacher(final)
        cached = _build(teacher, segments, corpus_info, Path(root), key, dim, progress)
    # complete: a later run finds it before it locks, and one waiting on this file finds it under the lock
    (Path(root) / f".{key}.lock").unlink(missing_ok=True)
    return cached


@contextmanager
def _building(root: Path, key: str) -> Iterator[None]:
    """Hold the lock of cache `key` under `root` (waiting, with a word, for another run that holds it).

    Runs sharing `[training.distill] cache` build into one `.KEY.partial` directory: unlocked, a second
    run opened its vectors with `w+` (truncating what the first had written, so the first committed
    zero rows) or lost the directory to the first one's rename (`keys.npy`: no such file). Where the file
    system has no locks, the build goes on unlocked."""
    root.mkdir(parents=True, exist_ok=True)
    with waiting_lock(root / f".{key}.lock", f"teacher cache: another run is building {root / key}; waiting for it"):
        yield


def _build(
    teacher: Teacher,
    segments: Callable[[], Iterable[List[str]]],
    corpus_info: Dict[str, Any],
    root: Path,
    key: str,
    dim: int,
    progress: bool,
) -> CachedTeacher:
    """Build (or continue) cache `key` in `root / .KEY.partial`, then rename it to `root / KEY`; the
    caller holds its lock."""
    final = root / key
    partial = root / f".{key}.partial"
    partial.mkdir(parents=True, exist_ok=True)
    n_tokens = int(corpus_info["tokens"])
    state_file = partial / "progress.json"
    state = _read_progress(state_file)
    projection = _projection(teacher, segments, partial, dim)
    vectors = numpy.memmap(partial / "vectors.f16", dtype=numpy.float16, mode="r+" if state["rows"] else "w+",
                           shape=(max(1, n_tokens), dim))
    first_row: Dict[int, int] = {}
    rows = 0
    bar = progress_bar(total=n_tokens, desc="teacher cache", unit=" tok", unit_scale=True, disable=not progress)
    pending: List[List[str]] = []

    def run_pending() -> None:
        nonlocal rows
        if not pending:
            return
        found, mask = teacher.token_vectors(pending)
        found, mask = found.cpu(), mask.cpu()  # the cache is written from the CPU, whatever the teacher's device
        found = _project(found, projection)
        found[~mask] = float("nan")
        vectors[rows : rows + len(found)] = found.numpy().astype(numpy.float16)
        rows += len(found)
        pending.clear()

    done_segments = 0
    calls = 0
    for batch in _batches(segments(), BATCH_TOKENS):
        for segment in batch:
            key_ = segment_key(segment)
            done_segments += 1
            if key_ in first_row:  # a repeated segment shares its first occurrence's rows
                continue
            first_row[key_] = rows + sum(len(s) for s in pending)
            if done_segments <= state["segments"]:  # written before an interruption
                rows += len(segment)
            else:
                pending.append(segment)
        bar.update(sum(len(s) for s in batch))
        run_pending()
        calls += 1
        if calls % PROGRESS_EVERY == 0 and done_segments > state["segments"]:
            vectors.flush()
            state = {"segments": done_segments, "rows": rows}
            with atomic_path(state_file) as tmp:  # a kill mid-write leaves the previous record, never half of one
                tmp.write_text(json.dumps(state))
        fault_point("teacher_cache.batch")  # tests interrupt a build here (faults.py)
    bar.close()
    vectors.flush()
    keys = numpy.fromiter(first_row.keys(), dtype=numpy.int64, count=len(first_row))
    starts = numpy.fromiter(first_row.values(), dtype=numpy.int64, count=len(first_row))
    order = numpy.argsort(keys)
    numpy.save(partial / "keys.npy", keys[order])
    numpy.save(partial / "starts.npy", starts[order])
    meta = {
        "version": CACHE_VERSION,
        "teacher": str(teacher.directory),
        "teacher_files": teacher_fingerprint(teacher.directory),
        "teacher_layer": teacher.layer,
        "teacher_precision": teacher.precision,
        "max_wordpieces": teacher.max_wordpieces,
        "teacher_dim": teacher.dim,
        "dim": dim,
        "projected": projection is not None,
        "rows": rows,
        "segments": len(first_row),
        "corpus": corpus_info,
    }
    with atomic_path(partial / "meta.json") as tmp:  # written last: the cache is complete
        tmp.write_text(json.dumps(meta, indent=2))
    state_file.unlink(missing_ok=True)
    if final.exists():  # left by a build that had no lock (a file system without them)
        shutil.rmtree(partial)
    else:
        partial.rename(final)
    return CachedTeacher(final)


def _read_progress(state_file: Path) -> Dict[str, int]:
    """The progress record of an interrupted build ({"segments", "rows"} written so far), or a fresh
    start where there is none or it cannot be read (a record torn by an older version's
    plain write): the vectors are then computed again from the first segment."""
    fresh = {"segments": 0, "rows": 0}
    if not state_file.is_file():
        return fresh
    try:
        state = json.loads(state_file.read_text(encoding="utf-8"))
        state = {name: int(state[name]) for name in ("segments", "rows")}
        if min(state.values()) < 0:
            raise ValueError(f"negative counts {state}")
    except (OSError, ValueError, TypeError, KeyError) as err:
        print(f"teacher cache: {state_file} is not readable ({err}); building the cache from the start",
              file=sys.stderr)
        return fresh
    return state


def _projection(
    teacher: Teacher, segments: Callable[[], Iterable[List[str]]], partial: Path, dim: int
) -> Optional[Tuple[torch.Tensor, torch.Tensor]]:
    """The (mean, directions) of the cache in `partial`: read back, or fitted on the corpus's first tokens."""
    if dim >= teacher.dim:
        return None
    path = partial / "projection.npz"
    if not path.is_file():
        sample: List[List[str]] = []
        for segment in segments():
            sample.append(segment)
            if sum(map(len, sample)) >= FIT_TOKENS:
                break
        # on the CPU: a teacher on CUDA gives CUDA tensors, and the projection is fitted and stored here
        found = [v[m].cpu() for v, m in (teacher.token_vectors(b) for b in _batches(sample, BATCH_TOKENS))]
        mean, directions = fit_projection(torch.cat(found), dim)
        tmp = partial / "projection.tmp.npz"
        numpy.savez(tmp, mean=mean, directions=directions)
        tmp.replace(path)
    saved = numpy.load(path)
    return torch.from_numpy(saved["mean"]), torch.from_numpy(saved["directions"])


def _project(vectors: torch.Tensor, projection: Optional[Tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    if projection is None:
        return vectors.clone()
    mean, directions = projection
    return (vectors - mean) @ directions


def load_projection(directory: Path) -> Optional[Tuple[numpy.ndarray, numpy.ndarray]]:
    """A cache's (mean, directions), or None where it stores the vectors unprojected."""
    path = Path(directory) / "projection.npz"
    if not path.is_file():
        return None
    saved = numpy.load(path)
    return saved["mean"], saved["directions"]


__all__ = ["CachedTeacher", "build_cache", "cache_key", "fit_projection", "load_projection", "segment_key",
           "teacher_fingerprint"]
