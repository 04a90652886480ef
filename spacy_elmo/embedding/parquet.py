"""`embed --format parquet`: one row per unit, in part files that a rerun can skip.

OUTPUT is a directory (local or an fsspec URL) of `part-FFFFF-CCCCCC.parquet`
files: FILE is the input file's position, CHUNK the unit number //
`chunk_lines`, so a part's content depends only on the input and the
settings, never on scheduling. A part is written under a hidden temporary
name and renamed when complete, so a file with a final name is always
complete, and a rerun with `resume` skips it. Shards of one input file
(`--shard K/N`) add `-shard-K-of-N` to their parts' names.

Each part's schema metadata records the run's settings (`spacy_elmo.run`:
`dump.run_record` plus `chunk_lines`); `resume` refuses a directory whose
parts were written with other settings (another chunking would put units
in other parts, and duplicate them), and `overwrite` removes every part and
stale temporary file of the run's share (all of them, unsharded), so no
part of an earlier run is left to be read as this one's. Parts of another
sharding of the input (unsharded parts in a `--shard K/N` run on one file,
parts of another N, or sharded parts in an unsharded run) hold the same
units as this run's under other names, so every row would be read twice: a
run refuses such a directory, and `overwrite` removes them too. A local run holds
a lock file in the directory (one per shard) while it writes.

Columns: `key` (the HDF5 dataset name of the same unit), `file` (its input
path), `number` (its number in that file), `doc` and `start` (for `.spacy`
input: its doc and first token there; otherwise `number` and 0), `text`,
`tokens` (list of strings) and `elmo`: float32 nested lists of shape
(L+1, n_tokens, width) (`--layers all`) or (n_tokens, width); the innermost
lists have a fixed size (width). Arrow, Ray Data, pandas, DuckDB and Spark
read the directory as one table; `read_parts` gives numpy arrays back.
"""
import json
import os
import re
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence, Set, Tuple, Union

import numpy

from ..faults import fault_point
from ..io.atomic import commit
from .dump import OutputLock, check_record, recorded_layer_mode
from .inputs import DumpError, Unit, is_url, local_path

if TYPE_CHECKING:
    import pyarrow

_PART = re.compile(r"^part-(\d+)-(\d+)(-shard-\d+-of-(\d+))?\.parquet$")  # file, chunk, shard suffix, N
_TEMPORARY = re.compile(r"^\.(part-.*\.parquet)\.\d+\.tmp$")  # `PartStore.write`'s name for a part being written
RUN_KEY = b"spacy_elmo.run"  # the schema metadata holding a part's run record (JSON)


def part_name(file: int, chunk: int, shard: Tuple[int, int] = (0, 1)) -> str:
    suffix = f"-shard-{shard[0]}-of-{shard[1]}" if shard[1] > 1 else ""
    return f"part-{file:05d}-{chunk:06d}{suffix}.parquet"


def part_for(unit: Unit, chunk_lines: int, shard: Tuple[int, int] = (0, 1)) -> str:
    """The part a unit belongs to."""
    return part_name(unit.file, unit.number // chunk_lines, shard)


def _pyarrow() -> ModuleType:
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401
    except ImportError as err:
        if getattr(err, "name", None) in ("pyarrow", "pyarrow.parquet"):
            raise DumpError('--format parquet needs pyarrow: pip install pyarrow (or "spacy-elmo[ray]")') from None
        raise DumpError(broken_import("pyarrow", err, "pyarrow>=16")) from None
    except Exception as err:  # an install that fails on import (one built for numpy 1 under numpy 2)
        raise DumpError(broken_import("pyarrow", err, "pyarrow>=16")) from None
    return pyarrow


def broken_import(package: str, err: BaseException, works: str) -> str:
    """The message for a package that is installed but fails to import: its error, not "not installed"
    (whose remedy, installing it, the user has already followed)."""
    return (f"{package} is installed but fails to import ({type(err).__name__}: {' '.join(str(err).split())}); "
            f'a version that works with the packages beside it is needed: pip install "{works}"')


def vectors_array(arrays: Sequence[numpy.ndarray]) -> "pyarrow.Array":
    """float32 arrays of shape (L+1, n, w) or (n, w) (one kind, one width) as one Arrow column
    of nested lists, the innermost of fixed size w; the values are copied bit for bit."""
    pa = _pyarrow()
    if not arrays:
        return pa.array([], type=pa.list_(pa.list_(pa.float32())))
    width = arrays[0].shape[-1]
    flat = numpy.concatenate([numpy.ascontiguousarray(a, dtype=numpy.float32).reshape(-1) for a in arrays])
    column = pa.FixedSizeListArray.from_arrays(pa.array(flat, type=pa.float32()), width)
    if arrays[0].ndim == 3:  # (L+1, n, w): a list of L+1 lists of n vectors per row
        inner = numpy.concatenate([[0]] + [numpy.full(a.shape[0], a.shape[1]) for a in arrays]).cumsum()
        column = pa.ListArray.from_arrays(pa.array(inner, type=pa.int32()), column)
    outer = numpy.concatenate([[0], [a.shape[0] for a in arrays]]).cumsum()
    return pa.ListArray.from_arrays(pa.array(outer, type=pa.int32()), column)


def printable_path(path: str) -> str:
    """`path` as UTF-8 text: a file name that is not UTF-8 (its bytes held as surrogates, which Arrow's
    strings refuse) has its odd bytes written as \\xNN escapes."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def rows_table(rows: Sequence[Tuple[str, str, Unit, numpy.ndarray]], layers: str,
               record: Optional[Dict[str, Any]] = None) -> "pyarrow.Table":
    """An Arrow table of (key, input path, unit, vectors) rows, with the `layers` mode in its metadata
    (`spacy_elmo.layers`; read it with `dump.recorded_layer_mode`, which also reads the old "mix"),
    and the run's `record` (`spacy_elmo.run`, JSON), which a resumed run checks its settings against."""
    pa = _pyarrow()
    table = pa.table({
        "key": pa.array([key for key, _, _, _ in rows], type=pa.string()),
        "file": pa.array([printable_path(path) for _, path, _, _ in rows], type=pa.string()),
        "number": pa.array([u.number for _, _, u, _ in rows], type=pa.int64()),
        "doc": pa.array([u.doc for _, _, u, _ in rows], type=pa.int64()),
        "start": pa.array([u.start for _, _, u, _ in rows], type=pa.int64()),
        "text": pa.array([u.text for _, _, u, _ in rows], type=pa.string()),
        "tokens": pa.array([list(u.tokens) for _, _, u, _ in rows], type=pa.list_(pa.string())),
        "elmo": vectors_array([array for _, _, _, array in rows]),
    })
    metadata = {"spacy_elmo.layers": recorded_layer_mode(layers)}
    if record is not None:
        metadata["spacy_elmo.run"] = json.dumps(record, sort_keys=True)
    return table.replace_schema_metadata(metadata)


class PartStore:
    """The part files of one output directory: which are finished, writing one atomically."""

    def __init__(self, output: str) -> None:
        self.output = str(output)
        if is_url(self.output):
            import fsspec

            self.fs, self.root = fsspec.core.url_to_fs(self.output)
        else:
            self.fs, self.root = None, local_path(self.output)

    def prepare(self) -> None:
        if self.fs is not None:
            self.fs.makedirs(self.root, exist_ok=True)
            return
        directory = Path(self.root)
        if not directory.parent.is_dir():
            raise DumpError(f"{directory.parent}: no such directory for the output; create it first")
        if directory.exists() and not directory.is_dir():
            raise DumpError(f"{directory}: exists and is not a directory (--format parquet writes a directory)")
        directory.mkdir(exist_ok=True)

    def names(self) -> Set[str]:
        """The finished parts (final names only; temporary files are hidden names)."""
        if self.fs is not None:
            if not self.fs.exists(self.root):
                return set()
            found = [os.path.basename(p.rstrip("/")) for p in self.fs.ls(self.root, detail=False)]
        else:
            found = os.listdir(self.root) if os.path.isdir(self.root) else []
        return {name for name in found if _PART.match(name)}

    def temporaries(self) -> Set[str]:
        """The hidden temporary files of parts being written (or left by a run that was killed)."""
        if self.fs is not None:
            found = [os.path.basename(p.rstrip("/")) for p in self.fs.ls(self.root, detail=False)] \
                if self.fs.exists(self.root) else []
        else:
            found = os.listdir(self.root) if os.path.isdir(self.root) else []
        return {name for name in found if _TEMPORARY.match(name)}

    def read_record(self, name: str) -> Optional[Dict[str, Any]]:
        """The run record in a part's schema metadata; {} for a Parquet part without one (an earlier
        version's, which `check_record` refuses to add to), None for one that cannot be read as
        Parquet (nothing to check against)."""
        pq = _pyarrow().parquet
        where = f"{self.root}/{name}"
        try:
            if self.fs is not None:
                with self.fs.open(where, "rb") as handle:
                    metadata = pq.read_schema(handle).metadata
            else:
                metadata = pq.read_schema(where).metadata
            loaded = json.loads(metadata[RUN_KEY]) if metadata and RUN_KEY in metadata else {}
        except Exception:  # not Parquet, or an unreadable record: nothing to check against
            return None
        if isinstance(loaded, dict):
            if metadata and b"spacy_elmo.layers" in metadata:
                loaded["layers"] = metadata[b"spacy_elmo.layers"].decode("utf-8")
            return loaded
        return None

    def remove(self, names: Sequence[str]) -> None:
        """Remove parts (or temporary files); one already gone is no error (the other processes of a
        sharded run may remove the same parts of another layout)."""
        for name in names:
            try:
                if self.fs is not None:
                    self.fs.rm(f"{self.root}/{name}")
                else:
                    os.unlink(os.path.join(self.root, name))
            except FileNotFoundError:
                pass

    def write(self, name: str, table: "pyarrow.Table") -> None:
        """Write a part under a temporary name, then give it its final one."""
        pq = _pyarrow().parquet
        tmp = f".{name}.{os.getpid()}.tmp"
        if self.fs is not None:
            with self.fs.open(f"{self.root}/{tmp}", "wb") as handle:
                pq.write_table(table, handle)
            self.fs.mv(f"{self.root}/{tmp}", f"{self.root}/{name}")
            return
        path = os.path.join(self.root, tmp)
        try:
            pq.write_table(table, path)
            commit(path, os.path.join(self.root, name))
        finally:
            if os.path.exists(path):
                os.unlink(path)


def _temporary_part(name: str) -> str:
    """The part a temporary file (`PartStore.write`'s hidden name) was becoming; "" for another file."""
    match = _TEMPORARY.match(name)
    return match.group(1) if match is not None else ""


class ParquetSink:
    """`embed`'s Parquet output: rows buffered per part, each part committed when complete.

    `shard`: the unit share (k, n) of a single input file (its parts' name suffix); `files`: the
    input positions this run reads; `run_shard`: the run's `--shard K/N` (several input files are
    shared out whole, without suffix). `record`: `dump.run_record` plus `chunk_lines`, written into
    every part and checked against the parts a resumed run keeps.
    """

    def __init__(self, output: str, layers: str, chunk_lines: int, shard: Tuple[int, int], files: Sequence[int],
                 resume: bool, overwrite: bool, record: Optional[Dict[str, Any]] = None,
                 run_shard: Tuple[int, int] = (0, 1)) -> None:
        self.store = PartStore(output)
        self.layers = layers
        self.chunk_lines = chunk_lines
        self.shard = shard
        self.run_shard = run_shard
        self.record = record
        self.store.prepare()
        self.lock: Optional[OutputLock] = None
        if self.store.fs is None:
            k, n = run_shard
            name = f".spacy_elmo.shard-{k}-of-{n}.lock" if n > 1 else ".spacy_elmo.lock"
            self.lock = OutputLock(Path(self.store.root) / name, output)
        try:
            self.done = self._start(output, set(files), resume, overwrite)
        except BaseException:
            self._release()
            raise
        self.rows: List[Tuple[str, str, Unit, numpy.ndarray]] = []
        self.current: Optional[str] = None
        self.parts_written = 0

    def _start(self, output: str, files: Set[int], resume: bool, overwrite: bool) -> Set[str]:
        """The finished parts this run keeps, after the checks (and, with `overwrite`, the removals).

        Parts of another sharding of the input (`_foreign`) hold the same units as this run's parts
        under other names, so a reader of the directory would get every row twice: refused, unless
        `overwrite`, which removes them (with or without `resume`)."""
        names = self.store.names()
        foreign = sorted(name for name in names if self._foreign(name))
        if foreign and not overwrite:
            raise DumpError(
                f"{output} holds {len(foreign)} part(s) of another sharding of the input ({foreign[0]}, ...: "
                f"{self._layout()} writes {self._family()}), whose rows this run's parts would hold again; pass "
                "--overwrite to remove them, or write to another directory"
            )
        self.store.remove(foreign)
        ours = sorted(name for name in names if self._ours(name) and name not in foreign)
        if ours and not (resume or overwrite):
            raise DumpError(f"{output} holds {len(ours)} part(s) of an earlier run; pass --resume to skip the "
                            "finished parts or --overwrite to start again")
        # the other shards' parts of this sharding: one directory is one run, so their settings must be this run's
        # (with --overwrite too, which replaces this shard's parts only: the directory would still mix two runs)
        siblings = [name for name in names if _PART.match(name) and name not in foreign and not self._ours(name)]
        recorded = self.store.read_record(siblings[0]) if siblings else None
        if recorded is not None:  # ({}: an earlier version's part, refused by check_record)
            check_record(recorded, self.record, f"{output}/{siblings[0]}",
                         "The shards of one directory are one run: write every shard with the same settings, "
                         "or remove the directory's parts (or write to another directory) to start the run again.",
                         "Remove the directory's parts (or write to another directory) to start the run again.")
        stale = sorted(name for name in self.store.temporaries() if self._ours(_temporary_part(name)))
        if overwrite and not resume:
            # every stale temporary of this share, at a URL too (no lock there): --overwrite says this run
            # replaces the share, and a killed run's temporary was otherwise never removed from a store
            self.store.remove(ours + stale)
            return set()
        for name in ours:  # every part kept was checked against its run's record when written: one tells
            recorded = self.store.read_record(name)
            if recorded is not None:  # ({}: an earlier version's part, refused by check_record)
                check_record(recorded, self.record, f"{output}/{name}",
                             "Resume with the settings it was written with, or pass --overwrite (without --resume) "
                             "to start again.")
                break
        if self.lock is not None:
            self.store.remove(stale)  # left by a killed run; no live run of this share writes here (the lock)
        return {name for name in ours if self._mine(name, files)}

    def _ours(self, name: str) -> bool:
        """Whether a part belongs to this run's share of the directory: every part, unsharded; else the
        parts with this shard's suffix (one input file), or of the input positions % N == K (several)."""
        match = _PART.match(name)
        if match is None:
            return False
        k, n = self.run_shard
        if n == 1:
            return True
        if self.shard[1] > 1:
            return match.group(3) == f"-shard-{self.shard[0]}-of-{self.shard[1]}"
        return match.group(3) is None and int(match.group(1)) % n == k

    def _foreign(self, name: str) -> bool:
        """Whether a part belongs to another sharding of the input than this run's: with one input
        file sharded by units (`shard` of N), a part without a shard suffix or of another N; otherwise
        (unsharded, or several files shared out whole, which keep their names), a part with one."""
        match = _PART.match(name)
        if match is None:
            return False
        if self.shard[1] > 1:
            return match.group(3) is None or int(match.group(4)) != self.shard[1]
        return match.group(3) is not None

    def _layout(self) -> str:
        k, n = self.run_shard
        return f"--shard {k}/{n}" if n > 1 else "an unsharded run"

    def _family(self) -> str:
        n = self.shard[1]
        return f"parts named *-shard-K-of-{n}.parquet" if n > 1 else "parts without a -shard- suffix"

    def _mine(self, name: str, files: Set[int]) -> bool:
        """Whether a part is one this run would write (so a resumed run skips its units)."""
        match = _PART.match(name)
        assert match is not None
        suffix = f"-shard-{self.shard[0]}-of-{self.shard[1]}" if self.shard[1] > 1 else None
        return int(match.group(1)) in files and match.group(3) == suffix

    def chunk_key(self, unit: Unit) -> str:
        return part_for(unit, self.chunk_lines, self.shard)

    def accept(self, key: str, unit: Unit) -> bool:
        return self.chunk_key(unit) not in self.done

    def write(self, key: str, path: str, unit: Unit, array: numpy.ndarray) -> None:
        self.current = self.chunk_key(unit)
        self.rows.append((key, path, unit, array))

    def end_chunk(self) -> None:
        if not self.rows:
            return
        assert self.current is not None
        self.rows.sort(key=lambda row: row[2].number)
        self.store.write(self.current, rows_table(self.rows, self.layers, self.record))
        self.done.add(self.current)
        self.rows = []
        self.parts_written += 1
        fault_point("embed.chunk")  # a part is committed: where the tests stop a run, as for HDF5's chunks

    def finish(self) -> str:
        try:
            self.end_chunk()
        finally:
            self._release()
        return self.store.output

    def close(self) -> None:
        """Drop the rows of an unfinished part (an error stopped the run; finished parts stay); release the lock."""
        self.rows = []
        self._release()

    def _release(self) -> None:
        if self.lock is not None:
            self.lock.release()


def read_parts(output: str) -> Iterator[Tuple[str, numpy.ndarray]]:
    """(key, float32 array) of every row of a Parquet output directory, part by part."""
    pa = _pyarrow()
    store = PartStore(output)
    for name in sorted(store.names()):
        where = f"{store.root}/{name}"
        table = pa.parquet.read_table(store.fs.open(where, "rb") if store.fs is not None else where)
        for key, array in zip(table.column("key").to_pylist(), column_arrays(table.column("elmo"))):
            yield key, array


def column_arrays(column: Union["pyarrow.Array", "pyarrow.ChunkedArray"]) -> List[numpy.ndarray]:
    """The float32 arrays of an `elmo` column (the inverse of `vectors_array`)."""
    pa = _pyarrow()
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    arrays: List[numpy.ndarray] = []
    nested = pa.types.is_list(column.type.value_type)
    width = (column.type.value_type.value_type if nested else column.type.value_type).list_size
    for i in range(len(column)):
        row = column[i].values
        if nested:
            n_layers = len(row)
            flat = row.flatten().flatten().to_numpy(zero_copy_only=False)
            arrays.append(flat.reshape(n_layers, -1, width))
        else:
            arrays.append(row.flatten().to_numpy(zero_copy_only=False).reshape(-1, width))
    return [numpy.ascontiguousarray(a, dtype=numpy.float32) for a in arrays]


__all__ = [
    "ParquetSink", "PartStore", "part_for", "part_name", "read_parts", "rows_table", "vectors_array", "column_arrays",
]
