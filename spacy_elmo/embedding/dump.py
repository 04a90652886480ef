"""Bulk embedding into the published dump layout (the reference `elmo` command's file), or Parquet.

OUTPUT is one HDF5 file: a dataset per input unit (a line of a text file,
see `inputs` for the other formats) named by its key ("0", "1", ...; with
several input files "FILE:NUMBER") of shape (L+1, n_tokens, width) float32
(or (n_tokens, width) for a single combined layer), and `sentence_to_index`,
a one-element string dataset holding JSON that maps each unit's text to its
key (left out with `sentence_index=False`, for outputs too large to keep
the map in memory). `output_format="parquet"` writes a directory of part
files instead (`parquet`).

Crash safety: the work happens in OUTPUT.partial, flushed after every chunk
of units, and is renamed to OUTPUT only when complete. An existing .partial
file is either resumed (`resume=True`: units already present are kept, and
OUTPUT, if it exists, is replaced at the commit, as the interrupted
`--overwrite` run would have done) or replaced (`overwrite=True`). A run
holds a lock beside OUTPUT (`OutputLock`) from start to commit, so a second
run on the same output is refused rather than writing into the same file.

Each file records the settings that decide its numbers (`run_record`: layer
mode and weights, a fingerprint of the model, precision, the input files'
names, sizes and formats, the tokenizer of JSONL text, an approximate
backend); `resume` and `join_shards` refuse pieces written with other
settings, naming the one that differs, so one file never mixes two runs.

Sharding: `shard=(k, n)` embeds one share of the input into
`OUTPUT.shard-k-of-n`: of one input file, the units with number % n == k;
of several, the whole files at positions % n == k (the others are never
opened). `join_shards` then writes OUTPUT holding HDF5 virtual datasets
that point into the shard files, with the same keys and `sentence_to_index`
as a single run. As such an OUTPUT reads whatever the shard files hold, a
shard's commit first removes a join of the same shard files
(`drop_stale_join`): a new run's shard never shows through an old run's
OUTPUT. With `resume`, a shard file already complete (with the run's
settings) counts as done (`finished_shard`): a torchrun process whose shard
finished before the run stopped goes straight to the join.

The local engine is here; `spacy_elmo.embedding.ray` runs the same units
through a Ray Data pipeline into the same sinks.
"""
import errno
import hashlib
import json
import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import (
    TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Set, Tuple, Union,
)

import numpy

from .. import defaults
from ..bilm.engine import APPROXIMATE
from ..bilm.engine.bulk import EMBED_BATCH_SENTENCES, EMBED_BATCH_TOKENS
from ..bilm.model import BiLM
from ..faults import fault_point
from ..io.atomic import commit
from ..io.errors import WeightsError
from ..io.file_lock import RunLock, run_lock_path
from .inputs import (
    ENCODING_ERRORS,
    DumpError,
    Unit,
    check_input,
    check_text,
    detect_format,
    expand_inputs,
    is_unit_key,
    is_url,
    key_order,
    local_path,
    read_lines,
    read_units,
    shard_files,
    unit_key,
)

if TYPE_CHECKING:
    import h5py

    from .parquet import ParquetSink  # parquet imports this module

PathLike = Union[str, Path]
InputsLike = Union[PathLike, Sequence[PathLike]]
LAYER_MODES = ("all", "top", "average", "weighted")
# Old spellings still read. "mix" is kept for the component's scalar mix (softmax of its
# logits times gamma), so the plain weighted sum of the layers is called "weighted".
DEPRECATED_LAYER_MODES = {"mix": "weighted"}
OUTPUT_FORMATS = ("hdf5", "parquet")
Progress = Optional[Callable[[int, int], None]]
Weights = Optional[Sequence[float]]


def layer_settings(layers: str, layer_weights: Weights = None, mix: Weights = None,
                   stacklevel: int = 3) -> Tuple[str, Optional[List[float]]]:
    """`layers` and its weights in the current spelling: the old `layers="mix"` and `mix=` are read
    as `"weighted"` and `layer_weights=` (the same weighted sum), with a FutureWarning once a process.

    `stacklevel` points the warning at the caller of the function that asks (its default), so the
    line shown is the user's. An unknown mode is left for `check_layers` to refuse.
    """
    deprecated = layers in DEPRECATED_LAYER_MODES or mix is not None
    if mix is not None:
        if layer_weights is not None:
            raise DumpError("mix= is the old name of layer_weights= (--layer-weights); pass layer_weights only")
        layer_weights = mix
    if deprecated:
        _warn_deprecated(stacklevel + 1)
    layers = DEPRECATED_LAYER_MODES.get(layers, layers)
    return layers, (list(layer_weights) if layer_weights is not None else None)


_WARNED: Set[str] = set()


def _warn_deprecated(stacklevel: int) -> None:
    if "mix" in _WARNED:
        return
    _WARNED.add("mix")
    warnings.warn(
        'elmo: layers="mix" and mix= are now called layers="weighted" and layer_weights= (--layers weighted '
        "--layer-weights on the command line): a plain weighted sum of the layers, not the component's "
        "scalar mix. They give the same sum; the old spelling will be removed.",
        FutureWarning,
        stacklevel=stacklevel,
    )


def recorded_layer_mode(value: Union[str, bytes, None]) -> str:
    """The layer mode a dump records (HDF5 attribute `layers`, Parquet metadata `spacy_elmo.layers`)
    in the current spelling: files written under the old name say "mix" for "weighted"; none: "all"."""
    if value is None:
        return "all"
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    return DEPRECATED_LAYER_MODES.get(str(value), str(value))


def combine_layers(layers: numpy.ndarray, mode: str, layer_weights: Weights = None,
                   mix: Weights = None) -> numpy.ndarray:
    """(L+1, n, w) -> as `mode` says: all layers, the top one, their mean, or their sum weighted by
    `layer_weights` as given (no softmax, no gamma). `mode="mix"`, `mix=`: the old spelling of
    "weighted", `layer_weights=` (see `layer_settings`)."""
    if mix is not None or mode in DEPRECATED_LAYER_MODES:
        mode, layer_weights = layer_settings(mode, layer_weights, mix)
    if mode == "all":
        return layers
    if mode == "top":
        return layers[-1]
    if mode == "average":
        return layers.mean(axis=0)
    if mode == "weighted":
        if layer_weights is None or len(layer_weights) != layers.shape[0]:
            raise DumpError(f"--layers weighted needs --layer-weights: {layers.shape[0]} comma-separated "
                            f"weights, one per layer, got {layer_weights}")
        with numpy.errstate(over="ignore"):  # 1e39 is inf in float32: refused below, not a RuntimeWarning
            weights = numpy.asarray(layer_weights, dtype=numpy.float32)
        if not numpy.isfinite(weights).all():  # a NaN or infinite weight makes every number of the output one
            raise DumpError(f"--layer-weights must be finite numbers (in float32's range), got {list(layer_weights)}")
        return numpy.tensordot(weights, layers, axes=(0, 0)).astype(numpy.float32)
    raise DumpError(f"unknown layer mode {mode!r}; choose from {LAYER_MODES}")


def check_layers(layers: str, layer_weights: Weights, n_layers: int, width: int) -> None:
    """Refuse an unknown layer mode or weights that are not one per layer, before any work."""
    layers, layer_weights = layer_settings(layers, layer_weights)
    if layers not in LAYER_MODES:
        raise DumpError(f"unknown layer mode {layers!r}; choose from {LAYER_MODES}")
    if layers == "weighted":
        combine_layers(numpy.zeros((n_layers, 0, width), dtype=numpy.float32), layers, layer_weights)


def shard_path(output: PathLike, shard: int, n_shards: int) -> Path:
    output = Path(output)
    return output.with_name(f"{output.name}.shard-{shard}-of-{n_shards}")


def partial_path(output: PathLike) -> Path:
    output = Path(output)
    return output.with_name(output.name + ".partial")


# -- what to read -----------------------------------------------------------------------------


@dataclass
class InputPlan:
    """The input files of a run, their formats, and the share of them one shard embeds.

    `mine`: positions of the files this shard opens; `unit_shard`: (k, n), the
    units with number % n == k of each (n == 1: all). Picklable, so Ray's
    read tasks carry it.
    """

    files: List[str]
    formats: List[str]
    mine: List[int]
    unit_shard: Tuple[int, int] = (0, 1)
    encoding_errors: str = "strict"
    lang: Optional[str] = None
    pipeline: Optional[str] = None
    shard: Tuple[int, int] = field(default=(0, 1))

    def file_units(self, i: int) -> Iterator[Tuple[str, Unit]]:
        """(key, unit) of file `i`'s units in this shard, in order."""
        k, n = self.unit_shard
        for unit in read_units(self.files[i], self.formats[i], i, self.encoding_errors, self.lang, self.pipeline):
            if unit.number % n == k:
                yield unit_key(i, unit.number, len(self.files)), unit

    def units(self) -> Iterator[Tuple[str, Unit]]:
        for i in self.mine:
            yield from self.file_units(i)

    def check(self) -> None:
        """Read this shard's files once as their formats, so that bad input fails before any work."""
        for i in self.mine:
            check_input(self.files[i], self.formats[i], self.encoding_errors, self.lang, self.pipeline)


def plan_inputs(
    inputs: InputsLike,
    input_format: Optional[str] = None,
    shard: Tuple[int, int] = (0, 1),
    encoding_errors: str = "strict",
    lang: Optional[str] = None,
    pipeline: Optional[str] = None,
    output: Optional[PathLike] = None,
) -> InputPlan:
    """Expand paths and globs into files, pick their formats and this shard's share.

    `output`: the run's OUTPUT, whose files (its .partial, shard files, a Parquet directory's parts)
    a glob leaves out and a path naming them is refused (`expand_inputs`), so that every run and
    every shard of it reads the same input.
    """
    if encoding_errors not in ENCODING_ERRORS:
        raise DumpError(f"unknown encoding error handling {encoding_errors!r}; choose from {ENCODING_ERRORS}")
    if lang and pipeline:
        raise DumpError("give --lang or --pipeline, not both")
    patterns = [str(inputs)] if isinstance(inputs, (str, Path)) else [str(p) for p in inputs]
    if not patterns:
        raise DumpError("no input files given")
    files = expand_inputs(patterns, None if output is None else str(output))
    formats = [detect_format(path, input_format) for path in files]
    mine, unit_shard = shard_files(len(files), shard)
    return InputPlan(files, formats, mine, unit_shard, encoding_errors, lang, pipeline, shard)


# -- what a run records ------------------------------------------------------------------------

Record = Dict[str, Any]
RECORD_ATTR = "run"  # the HDF5 attribute (JSON) holding a file's `run_record`
# a record's keys, in the order they are compared, and how a message names them
RECORD_NAMES = {
    "layers": "--layers",
    "layer_weights": "--layer-weights",
    "model": "model (--weights)",
    "precision": "--precision",
    "inputs": "input files",
    "input_formats": "--input-format",
    "tokenizer": "tokenizer (--lang / --pipeline)",
    "approximate": "--backend int8 (approximate)",
    "chunk_lines": "--chunk-lines",
}


class DumpWarning(UserWarning):
    """Something the run did on its own that the user should hear about (the command prints it as a line)."""


def model_fingerprint(model: BiLM) -> str:
    """A digest of everything that decides the model's numbers: its config, every tensor of its
    state (names, dtypes, shapes, values) and its token vocabularies.

    Recorded in every output, so that a resumed run or a join can tell a different model (another
    `--weights`, or the same name now holding other weights) from the same one wherever it was
    loaded from; the engine (`--backend`) and caches are not part of it (they are not in the state).
    """
    import torch

    digest = hashlib.sha256()
    digest.update(json.dumps(model.config.to_dict(), sort_keys=True).encode("utf-8"))
    digest.update(f"boundary_strings={bool(model.boundary_strings)}".encode("utf-8"))
    for name, tensor in sorted(model.state_dict().items()):
        flat = tensor.detach().to("cpu").contiguous().reshape(-1)
        digest.update(f"{name}:{flat.dtype}:{tuple(tensor.shape)}".encode("utf-8"))
        digest.update(memoryview(flat.view(torch.uint8).numpy()))  # no copy of the tensor's bytes
    if model.input_vocab is not None:
        digest.update(json.dumps(list(model.input_vocab.words)).encode("utf-8"))
    for vocab in (model.word_table_vocab, model.char_dictionary):  # every setting, not only the entries
        if vocab is not None:
            digest.update(json.dumps(vocab.to_dict(), sort_keys=True, default=list).encode("utf-8"))
    return "sha256:" + digest.hexdigest()


def input_identity(files: Sequence[str]) -> List[List[Any]]:
    """[name, size in bytes] of each input file, in order: what a resumed run must read again.

    The base name, not the path, so that a run moved to another directory (or machine) with its
    input still resumes; the size tells an edited or different file of the same name. A size
    that cannot be found (an unreachable URL) is None and matches any.
    """
    identity: List[List[Any]] = []
    for path in files:
        size: Optional[int]
        try:
            if is_url(path):
                import fsspec

                fs, where = fsspec.core.url_to_fs(path)
                size = int(fs.size(where))
            else:
                size = os.path.getsize(path)
        except Exception:  # a size is a check, never a reason to fail
            size = None
        identity.append([path.rstrip("/").rsplit("/", 1)[-1], size])
    return identity


def tokenizer_setting(plan: InputPlan) -> Optional[str]:
    """The tokenizer a run's JSONL "text" is split with ("lang en", "pipeline NAME"); None where no
    input is JSONL, as then `--lang` and `--pipeline` change nothing (tokens come with the input)."""
    if "jsonl" not in plan.formats:
        return None
    return f"pipeline {plan.pipeline}" if plan.pipeline else f"lang {plan.lang}"


def run_record(model_id: str, layers: str, layer_weights: Weights, precision: str, plan: InputPlan,
               backend: str = defaults.BACKEND) -> Record:
    """The settings that decide a run's numbers and keys, as its outputs record them (JSON-able).

    `model_id`: `model_fingerprint`. The input formats and the tokenizer decide the tokens, so the
    arrays' rows; an approximate backend (int8) changes their values (the exact backends agree to
    the last bits, so which one ran is not recorded). Parquet adds
    `chunk_lines` (it decides which part holds a unit).
    """
    layers, layer_weights = layer_settings(layers, layer_weights)
    return {
        "layers": layers,
        "layer_weights": [float(w) for w in layer_weights] if layer_weights is not None else None,
        "model": model_id,
        "precision": precision,
        "inputs": input_identity(plan.files),
        "input_formats": list(plan.formats),
        "tokenizer": tokenizer_setting(plan),
        "approximate": backend in APPROXIMATE,
    }


def read_record(attrs: Mapping[str, Any]) -> Record:
    """The record of an HDF5 file (its attributes): the `run` JSON, and `layers` (which files of
    every version have). A file of an earlier version records less; what is missing is not checked."""
    recorded: Record = {}
    raw = attrs.get(RECORD_ATTR)
    if raw is not None:
        try:
            loaded = json.loads(raw.decode("utf-8") if isinstance(raw, bytes) else str(raw))
        except ValueError:
            loaded = None
        if isinstance(loaded, dict):
            recorded.update(loaded)
    if "layers" in attrs:
        recorded["layers"] = recorded_layer_mode(attrs["layers"])
    return recorded


def record_difference(recorded: Mapping[str, Any], wanted: Mapping[str, Any], there: str = "there",
                      here: str = "here") -> Optional[str]:
    """The first setting (in `RECORD_NAMES` order) that both records hold with different values,
    described as "NAME: A {there}, B {here}"; None when they agree."""
    recorded, wanted = _normal_record(recorded), _normal_record(wanted)
    for key, name in RECORD_NAMES.items():
        if key not in recorded or key not in wanted or recorded[key] == wanted[key]:
            continue
        if key == "inputs" and _same_inputs(recorded[key], wanted[key]):
            continue
        if key == "inputs":
            return f"{name}: {_inputs_difference(recorded[key], wanted[key], there, here)}"
        return f"{name}: {_shown(key, recorded[key])} {there}, {_shown(key, wanted[key])} {here}"
    return None


def check_record(recorded: Mapping[str, Any], wanted: Optional[Mapping[str, Any]], where: str, advice: str,
                 unrecorded_advice: str = "Pass --overwrite (without --resume) to embed it again.",
                 holds_vectors: bool = True) -> None:
    """Refuse to add to `where` (a file or part written with `recorded`) under other settings, or where
    it records no model: an earlier version's file (before runs were recorded) may hold another
    model's vectors (the embedded English model itself changed since), and adding to it made a file
    of two models whose record then named one."""
    if wanted is None:
        return
    if "model" not in recorded and holds_vectors:  # (one that holds none yet mixes nothing)
        raise DumpError(f"{where} was written by an earlier version of spacy-elmo, which did not record the model "
                        f"and settings it embedded with, so this run cannot tell whether it may add to it. "
                        f"{unrecorded_advice}")
    difference = record_difference(recorded, wanted, "in it", "in this run")
    if difference is not None:
        raise DumpError(f"{where} was written with other settings, so this run cannot add to it: {difference}. "
                        f"{advice}")


def _normal_record(record: Mapping[str, Any]) -> Record:
    normal: Record = json.loads(json.dumps(dict(record)))  # tuples and lists alike, as read back
    if "layers" in normal:
        normal["layers"] = recorded_layer_mode(normal["layers"])
    if "inputs" in normal and isinstance(normal["inputs"], list):
        normal["inputs"] = [list(entry) for entry in normal["inputs"]]
    return normal


def _shown(key: str, value: Any) -> str:
    if key == "layer_weights":
        return "none" if value is None else ",".join(f"{w:g}" for w in value)
    if key == "model" and isinstance(value, str):
        return value[:19]  # "sha256:" and 12 hex digits
    return str(value)


def _same_entry(a: Any, b: Any) -> bool:
    """Two [name, size] entries of `input_identity` agree: the same name, and sizes equal or unknown."""
    if not (isinstance(a, list) and isinstance(b, list) and len(a) == len(b) == 2):
        return a == b
    return a[0] == b[0] and (a[1] is None or b[1] is None or a[1] == b[1])


def _same_inputs(old: Any, new: Any) -> bool:
    if not isinstance(old, list) or not isinstance(new, list) or len(old) != len(new):
        return False
    return all(_same_entry(a, b) for a, b in zip(old, new))


def _inputs_difference(old: Any, new: Any, there: str, here: str) -> str:
    if not isinstance(old, list) or not isinstance(new, list):
        return f"{old} {there}, {new} {here}"
    for i, (a, b) in enumerate(zip(old, new)):
        if not _same_entry(a, b):
            return f"file {i + 1} is {_shown_input(a)} {there}, {_shown_input(b)} {here}"
    return f"{len(old)} file(s) {there}, {len(new)} {here}"


def _shown_input(entry: List[Any]) -> str:
    return f"{entry[0]} ({entry[1]} bytes)" if len(entry) > 1 and entry[1] is not None else str(entry[0])


class OutputLock(RunLock):
    """`embed`'s `RunLock` on one output (file or shard), held from the sink's opening to its commit or
    close: without it two runs on the same OUTPUT (two `--resume`s started at once) write the same
    .partial file, and one commits the other's half-written work. Refusals are DumpErrors."""

    def __init__(self, lock_path: Path, target: Union[str, Path]) -> None:
        super().__init__(lock_path, target, error=DumpError)


def lock_path(output: Path) -> Path:
    """The lock file of an HDF5 output (or shard) file."""
    return run_lock_path(output)


# -- where results go -------------------------------------------------------------------------


class Hdf5Sink:
    """`embed`'s HDF5 output: one dataset per unit in FINAL.partial, committed to FINAL when complete.

    `record` (`run_record`): the run's settings, written into the file's attributes and checked
    against those of a .partial being resumed. The sink holds FINAL's `OutputLock` until
    `finish` or `close`.
    """

    def __init__(self, final: Path, layers: str, shard: Tuple[int, int], sentence_index: bool = True,
                 resume: bool = False, overwrite: bool = False, record: Optional[Record] = None,
                 joined: Optional[Path] = None) -> None:
        import h5py

        self.final = final
        self.shard = shard
        self.joined = joined  # a shard's: the OUTPUT its run's join writes (`drop_stale_join` before the commit)
        work = self.work = partial_path(final)
        for path in (final, work):
            refuse_directory(path, HDF5_IS_A_FILE)
        self.lock = OutputLock(lock_path(final), final)
        try:
            self.done: Set[str] = set()
            self.unwritten: Set[str] = set()  # units a stopped run created without their data: embedded again
            mode = self._start(resume, overwrite, record)
            try:
                self.out = h5py.File(work, mode)
            except OSError as err:
                raise DumpError(f"{work}: cannot write the output ({err})") from None
            for key in self.unwritten:
                del self.out[key]
        except BaseException:
            self.lock.release()
            raise
        self.created = mode == "w"  # a new .partial: removed again if the run fails before writing a unit
        self.written = 0
        self.mapping: Optional[Dict[str, str]] = {} if sentence_index else None
        self.out.attrs["status"] = "incomplete"
        self.out.attrs["layers"] = recorded_layer_mode(layers)
        self.out.attrs["shard"] = f"{shard[0]}/{shard[1]}"
        if record is not None:
            self.out.attrs[RECORD_ATTR] = json.dumps(record, sort_keys=True)
        self.writer = _DatasetWriter(self.out)
        self.remote: Optional[str] = None  # an fsspec URL to upload FINAL to (see `finish_sink`)

    def _start(self, resume: bool, overwrite: bool, record: Optional[Record]) -> str:
        """The mode to open FINAL.partial in ("a": resume it, "w": start it), after the checks.

        `resume` continues a .partial even where FINAL exists (an interrupted `--overwrite` run
        left both): its commit replaces FINAL, as that run's would have.
        """
        final, work = self.final, self.work
        if resume and work.exists():
            return "a" if self._resumable(record) else "w"
        if final.exists() and not overwrite:
            finished = " (a finished run: there is nothing to resume)" if resume else ""
            raise DumpError(f"{final} exists{finished}; pass --overwrite to replace it")
        if work.exists() and not overwrite:
            raise DumpError(
                f"{work} holds an interrupted run; pass --resume to continue it or --overwrite to start again"
            )
        if work.exists():
            work.unlink()
        return "w"

    def _resumable(self, record: Optional[Record]) -> bool:
        """Read the units already in FINAL.partial into `done`; False when the file is not HDF5 at all.

        Never deletes it: a file another process holds (HDF5's lock) or cannot read (an I/O or
        permission error) stops the run; one HDF5 cannot parse (torn by a crash mid-write) is
        moved aside to FINAL.partial.corrupt, with a warning, and the run starts again.
        """
        import h5py

        work = self.work
        try:
            with h5py.File(work, "r") as f:
                units = {key for key in f.keys() if is_unit_key(key)}
                unwritten = {key for key in units if not _holds_its_data(f[key])}
                recorded = read_record(f.attrs)
        except OSError as err:
            if err.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                raise DumpError(f"{work} is open in another process (it holds the file's lock); let that process "
                                "finish, or stop it, then rerun with --resume") from None
            if err.errno is not None:  # the system's error, not the file's content: nothing is changed
                raise DumpError(f"{work}: cannot open it to resume ({err}); nothing was changed") from None
            corrupt = work.with_name(work.name + ".corrupt")
            os.replace(work, corrupt)
            warnings.warn(f"{work} is not a readable HDF5 file ({err}): moved aside to {corrupt}, starting again",
                          DumpWarning, stacklevel=4)
            return False
        check_record(recorded, record, str(work),
                     "Resume with the settings it was written with, or pass --overwrite (without --resume) to "
                     "start again.", holds_vectors=bool(units - unwritten))
        self.done = units - unwritten
        self.unwritten = unwritten
        return True

    def chunk_key(self, unit: Unit) -> None:
        return None  # chunks are counted in units, across files

    def accept(self, key: str, unit: Unit) -> bool:
        """Note the unit in `sentence_to_index`; whether it still needs embedding."""
        if self.mapping is not None:
            self.mapping[unit.text] = key
        return key not in self.done

    def write(self, key: str, path: str, unit: Unit, array: numpy.ndarray) -> None:
        self.writer.write(key, array)
        self.written += 1

    def end_chunk(self) -> None:
        self.out.flush()
        fault_point("embed.chunk")

    def finish(self) -> Path:
        """Write the index and the "complete" status, commit FINAL.partial to FINAL, release the lock
        (whatever fails: the .partial then stays for --resume, and the lock must not outlive the run)."""
        import h5py

        try:
            with self.out as out:
                if "sentence_to_index" in out:
                    del out["sentence_to_index"]
                if self.mapping is not None:
                    out.create_dataset("sentence_to_index",
                                       data=numpy.array([json.dumps(self.mapping)], dtype=h5py.string_dtype()))
                out.attrs["sentence_index"] = self.mapping is not None
                out.attrs["status"] = "complete"
            if self.joined is not None:
                drop_stale_join(self.joined, self.shard[1])
            commit(self.work, self.final)
        finally:
            self.lock.release()
        return self.final

    def close(self) -> None:
        """Close without committing (an error stopped the run) and release the lock.

        FINAL.partial stays for --resume, unless this run created it and wrote no unit into it
        (bad input found by a Ray worker, an interrupt before the first chunk): such a file holds
        nothing to resume, and would only make the corrected rerun ask for --resume or --overwrite.
        A remote output's local copy (its temporary directory) goes: --resume refuses remote outputs.
        """
        try:
            if self.out.id.valid:
                self.out.close()
            if self.created and not self.written and self.work.exists():
                self.work.unlink()
        finally:
            self.lock.release()
            if self.remote is not None:  # a remote output's local copy: it cannot be resumed, so it goes
                shutil.rmtree(self.final.parent, ignore_errors=True)


def open_sink(
    output_path: PathLike,
    output_format: str,
    plan: InputPlan,
    layers: str,
    chunk_lines: int,
    sentence_index: bool,
    resume: bool,
    overwrite: bool,
    record: Optional[Record] = None,
) -> Union["Hdf5Sink", "ParquetSink"]:
    """The sink for OUTPUT in `output_format` (and this shard), with its checks done.

    An HDF5 output at an fsspec URL is written locally and uploaded when complete (see `finish_sink`).
    `record` (`run_record`) is written into the output and checked against what it resumes; Parquet
    adds `chunk_lines` to it, as that decides which part holds each unit.
    """
    from .parquet import ParquetSink

    if output_format not in OUTPUT_FORMATS:
        raise DumpError(f"unknown output format {output_format!r}; choose from {OUTPUT_FORMATS}")
    if chunk_lines < 1:
        raise DumpError(f"--chunk-lines must be >= 1, got {chunk_lines}")
    k, n = plan.shard
    if output_format == "parquet":
        return ParquetSink(str(output_path), layers, chunk_lines, plan.unit_shard, plan.mine, resume, overwrite,
                           record=None if record is None else {**record, "chunk_lines": chunk_lines},
                           run_shard=plan.shard)
    target = str(output_path)
    if is_url(target):
        if resume:
            raise DumpError("--resume needs a local HDF5 output (a remote one is uploaded only when complete)")
        refuse_existing_remote(target, overwrite)
        name = target.rstrip("/").rsplit("/", 1)[-1]
        final = Path(tempfile.mkdtemp(prefix="spacy-elmo-embed-")) / name
    else:
        final = Path(target[len("file://"):] if target.startswith("file://") else target)
    joined = None
    if n > 1:
        joined = None if is_url(target) else final
        final = shard_path(final, k, n)
    if not final.parent.is_dir():
        raise DumpError(f"{final.parent}: no such directory for the output; create it first")
    try:
        sink = Hdf5Sink(final, layers, (k, n), sentence_index, resume, overwrite, record, joined)
    except BaseException:
        if is_url(target):
            shutil.rmtree(final.parent, ignore_errors=True)
        raise
    if is_url(target):
        sink.remote = f"{target}.shard-{k}-of-{n}" if n > 1 else target
    return sink


def finish_sink(sink: Union["Hdf5Sink", "ParquetSink"]) -> Union[Path, str]:
    """Complete a sink: commit its file (HDF5; an fsspec URL target gets the file uploaded) or last part."""
    result = sink.finish()
    remote = getattr(sink, "remote", None)
    if isinstance(result, Path) and remote:
        import fsspec

        kept = f"the finished output is kept at {result}: copy it there yourself, then remove {result.parent}"
        try:
            fs, path = fsspec.core.url_to_fs(remote)
            fs.put_file(str(result), path)
        except KeyboardInterrupt as err:  # Ctrl-C (or SIGTERM) mid-upload: the work is done, and kept
            err.note = f"the upload to {remote} was stopped; {kept}"  # type: ignore[attr-defined]
            raise
        except Exception as err:  # the finished file stays where it is, and the message says where
            raise DumpError(f"{remote}: the upload failed ({type(err).__name__}: {err}); {kept}") from err
        shutil.rmtree(result.parent, ignore_errors=True)
        return remote
    return result


HDF5_IS_A_FILE = "the HDF5 output is a file (--format parquet writes a directory)"


def refuse_directory(path: Path, why: str) -> None:
    """A DumpError where a file is to be written and a directory stands (found only at the commit,
    it would cost the whole run)."""
    if path.is_dir():
        raise DumpError(f"{path}: is a directory; {why}")


def check_hdf5_output(output: PathLike) -> None:
    """Refuse a local HDF5 OUTPUT that cannot be written, before any work: a missing directory, or a
    directory itself (the dump is one file; only found at the commit, it cost the whole run)."""
    text = str(output)[len("file://"):] if str(output).startswith("file://") else str(output)
    path = Path(text)
    if text.endswith(("/", os.sep)):  # Path drops the slash: "out/" would write a file named "out"
        raise DumpError(f"{text}: names a folder, and the dump is one file (out/run.hdf5, say)")
    if not path.parent.is_dir():
        raise DumpError(f"{path.parent}: no such directory for the output; create it first")
    refuse_directory(path, HDF5_IS_A_FILE)
    name_max = _name_max(path.parent)
    if len(os.fsencode(path.name)) + NAME_ROOM > name_max:
        raise DumpError(f"{path.name[:40]}...: a name of {len(os.fsencode(path.name))} bytes; the run writes files "
                        f"beside the output whose names add up to {NAME_ROOM} bytes more (.partial, its lock, "
                        f"shards), over this file system's {name_max}: choose a shorter name")


NAME_ROOM = 40
"""Bytes the names of the files a run writes beside its output add to the output's name, at most
(`.NAME.shard-K-of-N.partial.PID-TOKEN.tmp`): an output name longer than the file system allows less
this is refused before any work (it used to fail after the model had loaded, in a double traceback)."""


def _name_max(folder: Path) -> int:
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):  # no pathconf (Windows), or no answer: the usual 255
        return 255


def followed_output_link(output: str) -> str:
    """A local OUTPUT that is a symbolic link: the file it points to, where that exists (written there,
    so that the link stays and the file it names is the one replaced; its `.partial` and lock go beside
    that file, on its file system). A link to nothing, or a loop, is refused: writing would replace
    the link itself. Anything else is returned as given."""
    if is_url(output):
        return output
    local = output[len("file://"):] if output.startswith("file://") else output
    if not os.path.islink(local):
        return output
    try:
        return os.path.realpath(local, strict=True)
    except OSError:  # FileNotFoundError (a dangling link), ELOOP (a loop)
        raise DumpError(f"{local} is a symbolic link to nothing (a missing file, or a loop): name the file to "
                        "write, or remove the link") from None


def refuse_existing_remote(target: str, overwrite: bool) -> None:
    """Refuse an HDF5 OUTPUT at an fsspec URL that exists, unless `overwrite`: the file is written
    locally and uploaded when complete, so the local checks never saw the remote one, and the upload
    replaced it."""
    if overwrite:
        return
    import fsspec

    try:
        fs, path = fsspec.core.url_to_fs(target)
        exists = fs.exists(path)
    except Exception as err:  # an unknown protocol, a missing filesystem package, no network
        raise DumpError(f"{target}: cannot check the output ({type(err).__name__}: {err})") from None
    if exists:
        raise DumpError(f"{target} exists; pass --overwrite to replace it")


def check_output_before_work(output: PathLike, output_format: str, overwrite: bool) -> None:
    """The checks of an HDF5 OUTPUT that need no input and no model, for the command line to make before it
    loads the model (a download, with a URL or catalogue --weights): a local one's folder and kind
    (`check_hdf5_output`), a remote one's existence (`refuse_existing_remote`)."""
    if output_format != "hdf5":
        return
    if is_url(str(output)):
        refuse_existing_remote(str(output), overwrite)
    else:
        check_hdf5_output(output)


def check_sharded_hdf5_output(output: PathLike) -> None:
    """Refuse a sharded HDF5 run's OUTPUT at a URL, before any work: its shards are joined into one
    local file (`join_shards`), so shards uploaded next to a URL could never be joined."""
    if is_url(str(output)):
        raise DumpError(f"{output}: a sharded HDF5 output (--shard or torchrun) must be a local path, as its "
                        "shards are joined into one local file: write it locally and copy it there, or use "
                        "--format parquet")


def stopped_note(output_path: PathLike, output_format: str = "hdf5", shard: Tuple[int, int] = (0, 1)) -> str:
    """What a stopped run (an interrupt, a full disk) left for `--resume`, as one sentence for the command line."""
    if output_format == "parquet":
        return f"the finished parts in {output_path} are kept; rerun with --resume to skip them"
    target = str(output_path)
    if is_url(target):
        return "a remote output is uploaded only when complete; rerun to start again"
    final = Path(target[len("file://"):] if target.startswith("file://") else target)
    if shard[1] > 1:
        final = shard_path(final, *shard)
    work = partial_path(final)
    try:
        kept = work.is_file()
    except OSError:  # its name too long for the file system, say: then it was never written
        kept = False
    if kept:
        return f"{work} is kept; rerun with --resume to continue it"
    return "nothing was written"


# -- the local engine -----------------------------------------------------------------------------


def embed_file(
    model: BiLM,
    input_path: InputsLike,
    output_path: PathLike,
    layers: str = "all",
    layer_weights: Weights = None,
    batch_tokens: int = EMBED_BATCH_TOKENS,
    batch_size: int = EMBED_BATCH_SENTENCES,
    chunk_lines: int = 4096,
    shard: Tuple[int, int] = (0, 1),
    resume: bool = False,
    overwrite: bool = False,
    precision: str = "float32",
    on_progress: Progress = None,
    encoding_errors: str = "strict",
    input_format: Optional[str] = None,
    lang: Optional[str] = None,
    pipeline: Optional[str] = None,
    sentence_index: bool = True,
    output_format: str = "hdf5",
    mix: Weights = None,
) -> Union[Path, str]:
    """Embed INPUT unit by unit into OUTPUT (or its shard file); memory stays flat.

    input_path: a file, a glob or a list of them (local or fsspec URLs; see
    `inputs` for the formats, told by extension unless `input_format` says).
    This shard's input is read once before any work (`InputPlan.check`), so a
    bad file fails at once, naming its first bad line (`encoding_errors`: see
    `read_lines`). Returns the file (or directory, for Parquet) written. `layers="weighted"` sums
    the layers with `layer_weights` as given; `layers="mix"` and `mix=` are its old spelling
    (`layer_settings`).
    """
    layers, layer_weights = layer_settings(layers, layer_weights, mix)
    check_layers(layers, layer_weights, model.n_layers, model.width)
    if output_format == "hdf5":
        output_path = followed_output_link(str(output_path))
    if output_format == "hdf5" and shard[1] > 1:
        check_sharded_hdf5_output(output_path)
    plan = plan_inputs(input_path, input_format, shard, encoding_errors, lang, pipeline, output_path)
    output = str(output_path)
    if output_format == "hdf5" and not is_url(output):
        check_hdf5_output(output)  # before reading the input, as bad output costs nothing to find
    plan.check()
    record = run_record(model_fingerprint(model), layers, layer_weights, precision, plan, model.backend)
    if resume and output_format == "hdf5" and plan.shard[1] > 1 and not is_url(output):
        final = shard_path(output[len("file://"):] if output.startswith("file://") else output, *plan.shard)
        if finished_shard(final, record):
            return final  # finished before the run was stopped: nothing to resume, nothing to redo
    sink = open_sink(output_path, output_format, plan, layers, chunk_lines, sentence_index, resume, overwrite,
                     record)
    try:
        run_local(model, plan.units(), plan.files, sink, layers, layer_weights, chunk_lines, batch_tokens,
                  batch_size, precision, on_progress)
    except BaseException:
        sink.close()
        raise
    return finish_sink(sink)


def run_local(
    model: BiLM,
    units: Iterable[Tuple[str, Unit]],
    files: Sequence[str],
    sink: Union["Hdf5Sink", "ParquetSink"],
    layers: str,
    layer_weights: Weights,
    chunk_lines: int,
    batch_tokens: int,
    batch_size: int,
    precision: str,
    on_progress: Progress = None,
) -> None:
    """Embed units in chunks of `chunk_lines` (and never across a sink's chunk boundary) into `sink`."""
    layers, layer_weights = layer_settings(layers, layer_weights)  # the old spelling warns here, not per unit
    pending: List[Tuple[str, Unit]] = []
    current = None
    for key, unit in units:
        if not sink.accept(key, unit):
            continue
        chunk = sink.chunk_key(unit)
        if pending and chunk != current:
            _write_chunk(model, sink, pending, files, layers, layer_weights, batch_tokens, batch_size, precision,
                         on_progress)
            pending = []
        current = chunk
        pending.append((key, unit))
        if len(pending) >= chunk_lines:
            _write_chunk(model, sink, pending, files, layers, layer_weights, batch_tokens, batch_size, precision,
                         on_progress)
            pending = []
    if pending:
        _write_chunk(model, sink, pending, files, layers, layer_weights, batch_tokens, batch_size, precision,
                     on_progress)


def embed_skipping_space(
    model: BiLM, sentences: Sequence[Sequence[str]], batch_tokens: int, batch_size: int, precision: str,
) -> Iterator[Tuple[List[int], List[numpy.ndarray]]]:
    """`model.embed_batches`, but tokens that are empty or only whitespace are left out of what the
    biLM reads and get zero rows in place, so each array still has one row per token.

    Why: the `elmo` component skips spaCy's whitespace tokens (`skip_whitespace`) and a text line
    never has any, so a `.spacy` doc or JSONL unit holding them must not feed them to the biLM, or
    its vectors would differ from the same words' elsewhere. Every engine embeds through here.
    """
    kept = [[i for i, token in enumerate(sentence) if token.strip()] for sentence in sentences]
    words = [[sentence[i] for i in rows] for sentence, rows in zip(sentences, kept)]
    for indices, arrays in model.embed_batches(words, batch_tokens, batch_size, precision):
        yield indices, [_with_zero_rows(array, kept[i], len(sentences[i])) for i, array in zip(indices, arrays)]


def _with_zero_rows(array: numpy.ndarray, rows: List[int], n_tokens: int) -> numpy.ndarray:
    """`array` (layers, len(rows), width) spread to (layers, n_tokens, width), zeros where no row is kept."""
    if len(rows) == n_tokens:
        return array
    full = numpy.zeros((array.shape[0], n_tokens, array.shape[2]), dtype=array.dtype)
    full[:, rows] = array
    return full


def _write_chunk(model: BiLM, sink: Union["Hdf5Sink", "ParquetSink"], pending: List[Tuple[str, Unit]],
                 files: Sequence[str], layers: str, layer_weights: Weights, batch_tokens: int, batch_size: int,
                 precision: str, on_progress: Progress) -> None:
    sentences = [unit.tokens for _, unit in pending]
    for indices, arrays in embed_skipping_space(model, sentences, batch_tokens, batch_size, precision):
        for i, array in zip(indices, arrays):
            key, unit = pending[i]
            sink.write(key, files[unit.file], unit, combine_layers(array, layers, layer_weights))
        if on_progress is not None:
            on_progress(sum(len(sentences[i]) for i in indices), len(indices))
    sink.end_chunk()


def _holds_its_data(dataset: "h5py.Dataset") -> bool:
    """Whether a unit's dataset was written: HDF5 allocates a contiguous dataset's storage at its
    first write, so one created by a run stopped before that write has none (an empty unit needs none)."""
    return dataset.size == 0 or dataset.id.get_storage_size() > 0


class _DatasetWriter:
    """`out.create_dataset(key, data=array)` through h5py's low-level API, for
    one new dataset per sentence (so the cost per dataset adds up).

    h5py's high-level call builds a type and a dataspace object per dataset
    and another type per write; here the type is made once per dtype and the
    dataspace once per shape (sentence lengths repeat), which cuts the time
    per dataset (benchmarks/RESULTS.md, "Speed and memory"). Units already in
    the file are skipped before embedding, so `key` is always new.
    """

    MAX_SPACES = 4096  # dataspaces kept (one per distinct shape)

    def __init__(self, out: "h5py.Group") -> None:
        self.out = out
        self._types: Dict[numpy.dtype, object] = {}
        self._spaces: Dict[Tuple[int, ...], object] = {}

    def write(self, key: str, array: numpy.ndarray) -> None:
        import h5py

        array = numpy.ascontiguousarray(array)
        dtype = self._types.get(array.dtype)
        if dtype is None:
            dtype = self._types[array.dtype] = h5py.h5t.py_create(array.dtype)
        space = self._spaces.get(array.shape)
        if space is None:
            if len(self._spaces) >= self.MAX_SPACES:
                self._spaces.clear()
            space = self._spaces[array.shape] = h5py.h5s.create_simple(array.shape)
        name = key.encode("utf-8")
        dataset = h5py.h5d.create(self.out.id, name, dtype, space)
        try:
            dataset.write(h5py.h5s.ALL, h5py.h5s.ALL, array, mtype=dtype)
        except BaseException:  # Ctrl-C or a full disk between the two calls: no empty unit stays behind
            self.out.id.unlink(name)
            raise


def join_shards(
    output_path: PathLike, n_shards: int, input_path: Optional[PathLike] = None, encoding_errors: str = "strict",
    overwrite: bool = False,
) -> Path:
    """OUTPUT with one virtual dataset per key, pointing into the shard files.

    `sentence_to_index` merges the shards' maps, a text repeated across
    shards going to its last key in input order, as in a single run (the same
    map that rereading the input gives; `input_path`, a single text file,
    rebuilds it that way instead). Shards written without a map give none.

    The shards must be one run's: their recorded settings (`run_record`) and the shape of their
    arrays must agree, else the join is refused naming what differs. An existing OUTPUT, or an
    interrupted run's OUTPUT.partial, is replaced only with `overwrite`, as `embed` does.
    """
    if is_url(str(output_path)):
        raise DumpError(f"{output_path}: --join writes a local file (a remote run's shards are joined where they "
                        "were written)")
    output = Path(local_path(str(output_path)))
    refuse_directory(output, "the joined output is a file")
    shards = [shard_path(output, k, n_shards) for k in range(n_shards)]
    missing = [str(s) for s in shards if not s.is_file()]
    if missing:
        raise DumpError(f"cannot join: shard file(s) missing or unfinished: {missing}")
    check_join_target(output, overwrite)
    work = partial_path(output)
    record = _check_shards(shards)
    lock = OutputLock(lock_path(output), output)
    try:
        _write_join(output, work, shards, n_shards, record, input_path, encoding_errors)
        commit(work, output)
    except BaseException:
        if work.exists():
            work.unlink()  # a join is redone in moments: nothing of it is worth resuming
        raise
    finally:
        lock.release()
    return output


def check_join_target(output: Path, overwrite: bool) -> None:
    """Refuse to join into `output` where it, or an interrupted run's OUTPUT.partial, exists (unless
    `overwrite`), or where either is a directory. `join_shards` checks it; a torchrun `embed`, whose
    process 0 joins, checks it before any work too (found only at the join, it cost the whole run)."""
    refuse_directory(output, "the joined output is a file")
    work = partial_path(output)
    if not overwrite:
        if output.exists():
            raise DumpError(f"{output} exists; pass --overwrite to replace it")
        if work.exists():
            raise DumpError(f"{work} holds an interrupted run; pass --overwrite to replace it with the joined file "
                            "(or finish that run with --resume first)")
    refuse_directory(work, "the joined output is a file")


def drop_stale_join(output: Path, n_shards: int) -> None:
    """Remove `output` where it is a join of `n_shards` shard files, before a shard file of a new run
    replaces one of them.

    A joined file holds no arrays of its own, only virtual datasets pointing into the shard files:
    left in place, it would read the new shard's arrays under the old run's keys and
    `sentence_to_index` (and NaN or a shorter array where they differ), still saying "complete" --
    one file mixing two runs. Without it, a file with the final name is always one run's, and
    the join of the new run writes it again. A single run's OUTPUT (arrays of its own) is left.
    """
    import h5py

    if not output.is_file():
        return
    try:
        with h5py.File(output, "r") as f:
            joined = int(f.attrs.get("shards", 0)) == n_shards
    except (OSError, ValueError, TypeError):  # not HDF5, or no join of ours: not ours to remove
        return
    if joined:
        output.unlink(missing_ok=True)  # every process of a torchrun run may get here: one removes it
        warnings.warn(f"{output} joined an earlier run's shards, which this run replaces: removed (this run's join "
                      "writes it again; --join N does for --shard runs)", DumpWarning, stacklevel=3)


def finished_shard(final: Path, record: Optional[Record]) -> bool:
    """Whether shard file `final` is already complete, with this run's settings (`run_record`), and has
    no .partial beside it: `resume` then counts it done (a torchrun process whose shard finished before
    the run was stopped goes straight to the join). Settings that differ are refused (DumpError)."""
    import h5py

    if not final.is_file() or partial_path(final).exists():
        return False
    try:
        with h5py.File(final, "r") as f:
            complete = f.attrs.get("status") == "complete"
            recorded = read_record(f.attrs)
    except OSError:
        return False  # unreadable: the sink says what is wrong with it
    if complete:
        check_record(recorded, record, str(final), "Resume with the settings it was written with, or pass "
                     "--overwrite (without --resume) to start again.")
    return complete


def _check_shards(shards: Sequence[Path]) -> Record:
    """The record the shards share (empty where none records one), after checking that they are one
    run's: complete, recorded with the same settings, and holding arrays of one kind (rank, layers, width)."""
    import h5py

    record: Record = {}
    first: Optional[Path] = None
    kind: Optional[Tuple[int, ...]] = None
    for path in shards:
        try:
            shard = h5py.File(path, "r")
        except OSError as err:
            raise DumpError(f"cannot join: {path} is not a readable HDF5 file ({err})") from None
        with shard:
            if shard.attrs.get("status") != "complete":
                raise DumpError(f"{path}: shard is not complete")
            recorded = read_record(shard.attrs)
            if first is not None and ("model" in record) != ("model" in recorded):
                older = path.name if "model" in record else first.name
                raise DumpError(f"cannot join: {older} was written by an earlier version of spacy-elmo, which did not "
                                "record its model, and the other shards by this one: they may hold two models' "
                                "vectors. Embed every shard with the same version.")
            difference = None
            if first is not None:
                difference = record_difference(record, recorded, f"in {first.name}", f"in {path.name}")
            if difference is not None:
                raise DumpError(f"cannot join: the shards were written with different settings: {difference}. "
                                "Embed every shard with the same settings.")
            key = next((k for k in shard.keys() if is_unit_key(k)), None)
            if key is not None:
                shape = shard[key].shape
                this = (len(shape), shape[0] if len(shape) == 3 else 0, shape[-1])
                if kind is not None and this != kind:
                    raise DumpError(f"cannot join: {path} holds arrays of another shape than the shards before it "
                                    f"(rank {this[0]}, width {this[2]}; they hold rank {kind[0]}, width {kind[2]}): "
                                    "embed every shard with the same --weights and --layers")
                kind = this
            record = {**recorded, **record} if first is not None else dict(recorded)
            first = first or path
    return record


def _write_join(output: Path, work: Path, shards: Sequence[Path], n_shards: int, record: Record,
                input_path: Optional[PathLike], encoding_errors: str) -> None:
    """Write the joined file to `work`: virtual datasets, the merged `sentence_to_index`, the shards' record."""
    import h5py

    mapping: Optional[Dict[str, str]] = {}
    with h5py.File(work, "w") as out:
        for path in shards:
            with h5py.File(path, "r") as shard:
                if "sentence_to_index" in shard and mapping is not None:
                    for text, key in json.loads(shard["sentence_to_index"][0]).items():
                        if text not in mapping or key_order(key) > key_order(mapping[text]):
                            mapping[text] = key
                else:
                    mapping = None
                out.attrs["layers"] = recorded_layer_mode(shard.attrs.get("layers"))
                for key in shard.keys():
                    if not is_unit_key(key):
                        continue
                    dataset = shard[key]
                    layout = h5py.VirtualLayout(shape=dataset.shape, dtype=dataset.dtype)
                    # a relative path keeps the joined file valid when the folder moves
                    layout[...] = h5py.VirtualSource(os.path.relpath(path, output.parent), key, shape=dataset.shape)
                    out.create_virtual_dataset(key, layout, fillvalue=numpy.nan)
        if input_path is not None and mapping is not None:
            # the last occurrence of a repeated line wins, as in a single run
            mapping = {line: str(number) for number, line in read_lines(str(input_path), encoding_errors)}
        if mapping is not None:
            out.create_dataset("sentence_to_index", data=numpy.array([json.dumps(mapping)], dtype=h5py.string_dtype()))
        out.attrs["sentence_index"] = mapping is not None
        out.attrs["status"] = "complete"
        out.attrs["shards"] = n_shards
        if record:
            out.attrs[RECORD_ATTR] = json.dumps({**record, "layers": str(out.attrs["layers"])}, sort_keys=True)


def read_dump(path: PathLike) -> Tuple[dict, "h5py.File"]:
    """(sentence_to_index, open file) of a finished dump; raises for incomplete files.

    A dump written without the map (`--no-sentence-index`) gives an empty one.
    """
    import h5py

    path = Path(path)
    try:
        f = h5py.File(path, "r")
    except OSError as err:
        raise WeightsError(f"{path}: not a readable HDF5 file ({err})") from None
    if f.attrs.get("status", "complete") != "complete":
        f.close()
        raise DumpError(f"{path}: incomplete dump (interrupted run)")
    return (json.loads(f["sentence_to_index"][0]) if "sentence_to_index" in f else {}), f


__all__ = [
    "embed_file", "join_shards", "combine_layers", "read_dump", "DumpError", "LAYER_MODES", "OUTPUT_FORMATS",
    "DEPRECATED_LAYER_MODES", "check_layers", "layer_settings", "recorded_layer_mode",
    "shard_path", "partial_path", "read_lines", "check_text", "plan_inputs", "InputPlan", "Hdf5Sink", "open_sink",
    "embed_skipping_space",
    "finish_sink", "run_local", "DumpWarning", "OutputLock", "model_fingerprint", "run_record", "read_record",
    "check_record", "record_difference", "check_hdf5_output", "check_output_before_work", "refuse_existing_remote",
    "stopped_note", "check_join_target",
    "drop_stale_join", "finished_shard",
]
