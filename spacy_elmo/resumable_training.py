"""spaCy's training loop with checkpoints that an interrupted run continues from.

`spacy train` saves model-last at every evaluation, but it empties the output
directory when it starts, keeps neither the step count nor the optimizer's
moments, and a killed run loses its place: hours of a downstream run on CPU
(an ELMo pipeline fine-tuned to its early stop takes two) start again.
`train_resumable` runs the same steps, from the pipeline's own [training]
block (batcher, dropout, accumulate_gradient, eval_frequency, patience,
max_steps, score weights, frozen and annotating components), and keeps in
its output directory:

- model-last: the pipeline after the last evaluation, or after the last
  finished step when the run was stopped (Ctrl-C, SIGTERM, a time
  budget; a second Ctrl-C or a crash leaves the last evaluation's), with
  `training_state.json` (the step, epoch, best score and its step,
  seconds spent, and the losses summed and words trained on since the
  last evaluation, which the next log row goes on from) and
  `training_state.msg` (Adam's moments and averages
  keyed by where each parameter sits in the pipeline, the random number
  generators, and, where the optimizer keeps averages, the parameters'
  own values) beside the pipeline's files. As `spacy train` does, the
  pipeline is saved with the optimizer's averages in place when it keeps
  any (`use_averages = true`); the values training goes on from are those
  in `training_state.msg`;
- model-best: model-last as it was at the best evaluation, written before the model-last that
  records that evaluation as the best (a run killed between the two resumes from the previous
  model-last and writes model-best again; one left stale by an older version is rewritten from
  model-last on --resume where model-last still holds the best evaluation's weights);
- log.jsonl: one row per evaluation, as spaCy's ConsoleLogger.v3 writes it, appended a whole
  line at a time just before the evaluation's checkpoint (`read_log` leaves out a last line torn
  by a run killed while appending it; --resume drops it, and rows past model-last, and writes
  them again);
- run_settings.json: what defines the run (the caller's `settings`: config, overrides (those
  naming a file or folder by contents: `overrides_by_contents`), corpora with their sizes and
  digests, seed, the pipeline or model it starts from), written when it starts afresh. A later
  fresh start on an output whose run has finished compares its own settings with them: the
  same, the run is kept ("nothing to do"); different, it is refused with each difference named
  (`overwrite` starts again). Hours of training are never deleted by a command that only meant
  to make sure they had been done. --resume checks that the files and folders it names by
  contents are still those (`check_inputs`): a corpus changed since would mix two runs.

Each is replaced whole (written beside, then renamed), so a run killed while
saving keeps the previous one: as NAME.old where it was killed between the
two renames, which `recover_output` puts back (`read_state` and
`train_resumable` call it). `resume=True` loads nothing itself: the caller
passes `spacy.load(output / "model-last")`, after `recover_output(output)`,
and training goes on from its step with the same batches (each epoch's order comes from the seed and
the epoch, and the batcher is replayed up to the step), the same learning
rate and dropout schedules, the optimizer's state, the parameters as they
were (not their averages), the best score and the patience left: it ends
where the uninterrupted run would have.
"""
import argparse
import glob
import hashlib
import json
import math
import random
import shutil
import signal
import sys
import threading
import time
import warnings
from contextlib import contextmanager, nullcontext
from pathlib import Path
from types import FrameType
from typing import IO, TYPE_CHECKING, Any, Callable, ContextManager, Dict, Iterator, List, Optional, Tuple, Union

import numpy
import srsly
import torch
from wasabi import Printer

from .bilm.errors import SpacyElmoError
from .faults import fault_point
from .io.atomic import atomic_path, fsync_directory, fsync_tree
from .io.checksum import sha256_file
from .io.file_lock import OutputBusyError, RunLock, output_lock
from .pretrain.checkpoint import rng_state, set_rng_state
from .pretrain.progress import STOP_SIGNALS  # the signals that ask a run to save and stop: pretraining's too

if TYPE_CHECKING:
    from spacy.language import Language
    from thinc.api import Optimizer
    from thinc.shims import Shim

MODEL_LAST, MODEL_BEST, LOG = "model-last", "model-best", "log.jsonl"
STATE_JSON, STATE_MSG = "training_state.json", "training_state.msg"
RUN_SETTINGS = "run_settings.json"
WALL_TIME = "wall_time.json"
FINISHED = ("early stopping", "max steps", "max epochs")
"""Why a run ended that --resume has nothing to add to; any other state (a time budget, a signal, a
crash that left the last evaluation's checkpoint) can be resumed."""
EXIT_TIME_BUDGET = 3
"""The exit status of a run stopped by its --max-minutes budget: not finished (a workflow must not
go on to the next step on a half-trained model), and not an error: --resume continues it."""
SIGNAL_EXIT = {"SIGINT": 130, "SIGTERM": 143, "SIGHUP": 129}
"""The exit status of a run a signal stopped (128 + the signal's number, as shells report it;
`python -m spacy_elmo pretrain` exits with the same)."""
_OPTIMIZER_TABLES = ("mom1", "mom2", "averages")
_OPTIMIZER_COUNTS = ("nr_update", "last_seen")


class ResumeError(SpacyElmoError, ValueError):
    """An output directory that cannot be resumed: what is missing or does not match, and what to do."""


class SettingsChanged(ResumeError):
    """An output holding a finished run made with other settings than a fresh start's: each difference."""


class ResumeWarning(UserWarning):
    """A run that resumes, but not exactly where it stopped (a training state from an older version)."""


class TrainingSettingsError(SpacyElmoError, ValueError):
    """A [training] setting, time budget or corpus `train_resumable` cannot train with: one line naming it."""


def read_state(output: Path) -> Optional[Dict[str, Any]]:
    """The training state model-last holds (None when there is no model-last to resume).

    A run killed between the two renames that replace model-last left only model-last.old:
    that is put back first (`recover_output`), so the run it holds is resumed, not lost.
    """
    recover_output(output)
    path = Path(output) / MODEL_LAST / STATE_JSON
    if not path.is_file():
        return None
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as err:  # UnicodeDecodeError among them
        raise ResumeError(f"{path}: not a training state ({err}); start afresh with --overwrite") from None
    if not isinstance(state, dict):
        raise ResumeError(f"{path}: not a training state (not a JSON object); start afresh with --overwrite")
    missing = {"step", "epoch", "best_score", "best_step", "seconds", "stopped"} - set(state)
    if missing:
        raise ResumeError(f"{path}: the training state lacks {sorted(missing)}; start afresh with --overwrite")
    problem = _state_problem(state)
    if problem:
        raise ResumeError(f"{path}: not a training state ({problem}); start afresh with --overwrite")
    return state


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_STATE_FIELDS: Dict[str, Tuple[str, Callable[[Any], bool]]] = {
    "step": ("a count", _is_count),
    "epoch": ("a count", _is_count),
    "best_step": ("a count or null", lambda v: v is None or _is_count(v)),
    "best_score": ("a number or null", lambda v: v is None or _is_number(v)),
    "seconds": ("a number", _is_number),
    "stopped": ("a string or null", lambda v: v is None or isinstance(v, str)),
    "signal": ("a string or null", lambda v: v is None or isinstance(v, str)),
    "losses": ("an object of numbers", lambda v: isinstance(v, dict) and all(_is_number(x) for x in v.values())),
    "words": ("a count", _is_count),
}
"""What each field of training_state.json must hold (signal, losses and words may be missing: older states)."""


def _state_problem(state: Dict[str, Any]) -> Optional[str]:
    """The first field of a training state that holds the wrong kind of value (None: none does).

    A hand-edited `"step": "x"` passed the check for missing fields and failed later, in the loop,
    with a TypeError's traceback."""
    for key, (kind, valid) in _STATE_FIELDS.items():
        if key in state and not valid(state[key]):
            return f"its {key} is {json.dumps(state[key])}, not {kind}"
    return None


PathLike = Union[str, Path]


def _glob_root(pattern: str) -> Path:
    """The folders a glob pattern starts with that hold no wildcard ("corpus" for "corpus/ewt-d*.spacy"):
    what its matches are named relative to, so that two spellings of one folder match the same names."""
    fixed: List[str] = []
    for part in Path(pattern).parts[:-1]:
        if any(c in part for c in "*?["):
            break
        fixed.append(part)
    return Path(*fixed) if fixed else Path(".")


def path_identity(path: PathLike) -> Dict[str, Any]:
    """What a run read from `path`: the path as given, its size in bytes and a SHA-256 of its contents.

    A directory (a pipeline, a model) or a glob pattern (a corpus) counts as all the files in it or
    matched by it, by relative name (a glob's matches relative to its folders without wildcards)
    and content; run_settings.json files (these records) are not part of it. A path that does not
    exist is {"path", "missing": True}. Settings compare the contents, not the spelling of the path
    (see `settings_differences`).
    """
    text = str(path)
    where = Path(text)
    if where.is_file():
        return {"path": text, "bytes": where.stat().st_size, "sha256": sha256_file(where)}
    if where.is_dir():
        files = sorted(f for f in where.rglob("*") if f.is_file() and f.name != RUN_SETTINGS)
        names = [f.relative_to(where).as_posix() for f in files]
    elif any(c in text for c in "*?["):
        files = sorted(Path(m) for m in glob.glob(text, recursive=True) if Path(m).is_file())
        root = _glob_root(text)
        names = [f.relative_to(root).as_posix() for f in files]
    else:
        return {"path": text, "missing": True}
    if not files:
        return {"path": text, "missing": True}
    digest = hashlib.sha256()
    for name, file in zip(names, files):
        digest.update(f"{name}\0{sha256_file(file)}\0".encode("utf-8"))
    return {"path": text, "bytes": sum(f.stat().st_size for f in files), "files": len(files),
            "sha256": digest.hexdigest()}


def _is_identity(value: Any) -> bool:
    return isinstance(value, dict) and "path" in value and ("sha256" in value or "missing" in value)


def _describe(value: Any) -> str:
    """A setting's value as a difference names it."""
    if _is_identity(value):
        if value.get("missing"):
            return f"{value['path']} (missing)"
        return f"{value['path']} ({value['bytes']:,} bytes, sha256 {value['sha256'][:12]})"
    return "(unset)" if value is None else json.dumps(value, sort_keys=True)


def settings_differences(recorded: Dict[str, Any], current: Dict[str, Any], prefix: str = "") -> List[str]:
    """Each setting that differs, as "name: recorded -> current" (nested settings by dotted name).

    Files and folders compare by contents (size and digest), not by how their path is spelled,
    so a run started from another directory with the same data is the same run.
    """
    differences = []
    for key in sorted(set(recorded) | set(current), key=str):
        old, new = recorded.get(key), current.get(key)
        if isinstance(old, dict) and isinstance(new, dict) and _is_identity(old) and _is_identity(new):
            fields = ("missing", "bytes", "files", "sha256")
            same = all(old.get(field) == new.get(field) for field in fields)
        elif isinstance(old, dict) and isinstance(new, dict) and not _is_identity(old) and not _is_identity(new):
            differences += settings_differences(old, new, f"{prefix}{key}.")
            continue
        else:
            same = json.dumps(old, sort_keys=True) == json.dumps(new, sort_keys=True)
        if not same:
            differences.append(f"{prefix}{key}: {_describe(old)} -> {_describe(new)}")
    return differences


PATH_OVERRIDES = ("paths.", "initialize.vectors", "initialize.init_tok2vec")
"""The config overrides whose value names a file or folder the run reads (a key in [paths], or one of
these), besides any whose last part is "path": `overrides_by_contents` records those by contents."""


def _names_input(key: str) -> bool:
    return key.startswith(PATH_OVERRIDES) or key.rsplit(".", 1)[-1] == "path"


def overrides_by_contents(overrides: Dict[str, Any], skip: Tuple[str, ...] = ()) -> Dict[str, Any]:
    """The config overrides as run_settings.json records them: a value of a path setting
    (`PATH_OVERRIDES`) that names an existing file or folder by its `path_identity`, others as given.

    `--paths.vectors training/static_vectors` recorded as the string alone made a rebuilt vectors
    folder look like the same run ("nothing to do"); by contents, a changed folder is a changed
    setting, and the same contents under another spelling of its path are not. Keys in `skip` (those
    the caller records by contents under names of their own, such as paths.train) stay as given.
    """
    recorded: Dict[str, Any] = {}
    for key, value in overrides.items():
        if key not in skip and _names_input(key) and isinstance(value, str) and value and Path(value).exists():
            recorded[key] = path_identity(value)
        else:
            recorded[key] = value
    return recorded


def record_settings(output: PathLike, settings: Dict[str, Any]) -> None:
    """Write OUTPUT/run_settings.json: `settings` and the command line that started the run."""
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    record = {"settings": settings, "command": [sys.executable, *sys.argv]}
    written = output / (RUN_SETTINGS + ".tmp")
    written.write_text(json.dumps(record, indent=2), encoding="utf-8")
    written.replace(output / RUN_SETTINGS)


def read_record(output: PathLike) -> Optional[Dict[str, Any]]:
    """OUTPUT/run_settings.json as `record_settings` wrote it (None where there is none: a run from
    before runs recorded their settings)."""
    path = Path(output) / RUN_SETTINGS
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as err:
        raise ResumeError(f"{path}: not a settings record ({err}); start afresh with --overwrite") from None
    if not isinstance(record, dict) or not isinstance(record.get("settings"), dict):
        raise ResumeError(f"{path}: not a settings record; start afresh with --overwrite")
    return record


def keep_finished(output: PathLike, settings: Dict[str, Any], what: str = "run") -> str:
    """For an OUTPUT that holds a finished run: the line saying it is kept, as it was made with the same
    `settings` (or before settings were recorded, when there is nothing to compare).

    Raises SettingsChanged naming each difference, and the remedies, when they are not the same.
    """
    record = read_record(output)
    if record is None:
        return (f"{output} has finished (its {what} was made before runs recorded their settings, so they "
                f"cannot be compared); kept: --overwrite, or deleting {output}, starts it again")
    differences = settings_differences(record["settings"], settings)
    if differences:
        raise SettingsChanged(f"{output} holds a finished {what} made with other settings "
                              f"({'; '.join(differences)}): start it again with --overwrite, or delete {output}")
    return f"{output} has finished with the same settings; nothing to do"


def check_unfinished(output: PathLike, settings: Dict[str, Any], what: str = "run") -> None:
    """Before an unfinished run in OUTPUT is continued with `settings`: raise SettingsChanged, naming each
    difference and the remedy (--overwrite), when it was started with other settings
    (its run_settings.json). Nothing is checked where there is no record (a run from before them).

    Continuing would mix two runs: what it trains from then on is not what its record says it is,
    and the next command refuses its own output as made with other settings.
    """
    record = read_record(output)
    if record is None:
        return
    differences = settings_differences(record["settings"], settings)
    if differences:
        raise SettingsChanged(f"{output} holds an unfinished {what} started with other settings "
                              f"({'; '.join(differences)}): start it again with --overwrite, or delete {output}")


def _inputs_now(settings: Dict[str, Any]) -> Dict[str, Any]:
    """`settings` with each file or folder named by contents (`path_identity`) as it is now, the rest as given."""
    now: Dict[str, Any] = {}
    for key, value in settings.items():
        if _is_identity(value):
            now[key] = path_identity(str(value["path"]))
        elif isinstance(value, dict):
            now[key] = _inputs_now(value)
        else:
            now[key] = value
    return now


def changed_inputs(settings: Dict[str, Any]) -> List[str]:
    """Each file or folder that recorded `settings` name by contents (a corpus, the config, a biLM, an
    override such as paths.vectors) whose contents are no longer those, as "name: recorded -> now"."""
    return settings_differences(settings, _inputs_now(settings))


def check_inputs(output: PathLike, what: str = "run") -> None:
    """Before an unfinished run in OUTPUT is resumed: raise SettingsChanged, naming each difference and the
    remedies, when a file or folder its run_settings.json names by contents has changed since it started
    (nothing is checked where there is no record: a run from before them).

    The resumed run reads its corpora from the paths it was started with: a corpus changed there was
    trained on from the step it resumed at, exit 0, and the next fresh start then refused the finished
    run as made with other settings."""
    record = read_record(output)
    if record is None:
        return
    changed = changed_inputs(record["settings"])
    if changed:
        raise SettingsChanged(f"{output} holds an unfinished {what} whose inputs changed since it started "
                              f"({'; '.join(changed)}): put them back to resume it, or start it again with "
                              "--overwrite")


def check_resumable(output: PathLike, what: str = "run") -> Optional[Dict[str, Any]]:
    """Before --resume loads or writes anything: OUTPUT's run_settings.json (None where there is none: a
    run from before them), read and checked with the training state model-last holds (ResumeError
    naming the file where either is damaged: a damaged record failed the run only after it had
    finished training), and, for an unfinished run, its inputs (`check_inputs`)."""
    record = read_record(output)
    saved = read_state(Path(output))
    if saved is not None and saved["stopped"] not in FINISHED:
        check_inputs(output, what)
    return record


def _recorded_subset(recorded: Dict[str, Any], given: Dict[str, Any]) -> Dict[str, Any]:
    """The recorded values of the settings in `given` (of a nested group such as the overrides, only the
    keys given: an override the resuming command leaves out is not a difference)."""
    subset: Dict[str, Any] = {}
    for key, value in given.items():
        old = recorded.get(key)
        if isinstance(value, dict) and isinstance(old, dict) and not _is_identity(value) and not _is_identity(old):
            subset[key] = {name: old.get(name) for name in value}
        else:
            subset[key] = old
    return subset


def ignored_arguments(record: Optional[Dict[str, Any]], given: Dict[str, Any]) -> List[str]:
    """Each setting a resuming command gives (`given`, as its run_settings would record them) that differs
    from the run's `record` ("name: recorded -> given"; files by contents): --resume goes on with the
    recorded ones, and says so. Nothing where there is no record."""
    if record is None:
        return []
    return settings_differences(_recorded_subset(record["settings"], given), given)


def finished_run_kept(output: PathLike, settings: Dict[str, Any], overwrite: bool = False) -> Optional[str]:
    """Whether a fresh start may train into OUTPUT: None, it may (nothing there, or `overwrite`); a
    line saying so when OUTPUT already holds this run, finished (the caller trains nothing).

    Raises ResumeError for an unfinished run there (continue it with --resume, or --overwrite) and
    SettingsChanged for a finished one made with other settings.
    """
    if overwrite:
        return None
    saved = read_state(Path(output))
    if saved is None:
        held = [name for name in (MODEL_BEST, MODEL_LAST) if (Path(output) / name).exists()]
        # (this version's run records its settings first: one killed before its first model-last is
        # started again, as before)
        if held and read_record(output) is None:  # an earlier version's, or `spacy train`'s: it was lost
            raise ResumeError(f"{output} holds {' and '.join(held)} without a training state (a run of an earlier "
                              "version, or of `spacy train`), whose settings and end cannot be told: start afresh "
                              f"with --overwrite, or choose another output folder")
        return None
    if saved["stopped"] not in FINISHED:
        raise ResumeError(f"{output} holds an unfinished run (model-last at step {saved['step']}): continue it "
                          f"with --resume, or start afresh with --overwrite")
    return keep_finished(output, settings)


def pipeline_settings(nlp: "Language") -> Dict[str, Any]:
    """The settings of a run of `nlp` where the caller names none: its config (overrides included,
    seed and all), and the training and development corpora it names."""
    config = nlp.config
    digest = hashlib.sha256(config.to_str().encode("utf-8")).hexdigest()
    paths = config.get("paths", {})
    return {"config_sha256": digest,
            "train": path_identity(paths["train"]) if paths.get("train") else None,
            "dev": path_identity(paths["dev"]) if paths.get("dev") else None}


def exit_status(state: Dict[str, Any]) -> Tuple[int, Optional[str]]:
    """The exit status of a command whose training ended in `state`, and the line to print when not 0.

    0 only for a run that reached its end (FINISHED), so that `spacy project run` records the step
    and goes on; a run a signal stopped exits 130 (SIGINT) or 143 (SIGTERM), one stopped by its
    time budget EXIT_TIME_BUDGET: both are continued by the same command with --resume.
    """
    stopped = state.get("stopped")
    if stopped in FINISHED:
        return 0, None
    at = f"at step {state.get('step')}"
    if stopped == "time budget":
        return EXIT_TIME_BUDGET, (f"stopped by its --max-minutes budget {at}, unfinished; run the same command with "
                                  f"--resume to continue it (exit {EXIT_TIME_BUDGET})")
    name = state.get("signal")  # None: the caller's `stop`, as Ctrl-C would have (130)
    code = SIGNAL_EXIT.get(name or "SIGINT", SIGNAL_EXIT["SIGINT"])
    by = f" by {name}" if name else ""
    return code, f"interrupted{by} {at}, unfinished; run the same command with --resume to continue it"


class Tee:
    """Write to the console and to a log file (train.log): flushed at each write, so a run killed
    keeps its table up to its last line."""

    def __init__(self, *streams: IO) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
            stream.flush()
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


def write_wall_time(output: PathLike, fields: Dict[str, Any], first_run: Dict[str, Any], resume: bool) -> None:
    """OUTPUT/wall_time.json: this session's `fields` (seconds, why it stopped, steps, exit status),
    with the run as first started (`first_run`: its command line, overrides, where it started from).

    On --resume those stay the first session's (from the wall_time.json it wrote, else from
    run_settings.json, passed by the caller in `first_run`), and the resuming command lines are
    listed under "resumes": a resumed run is described by what defines it, not by its last command.
    """
    path = Path(output) / WALL_TIME
    command = [sys.executable, *sys.argv]
    previous: Dict[str, Any] = {}
    if resume and path.is_file():
        try:
            previous = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            previous = {}
    if resume:
        kept = {key: previous.get(key) if previous.get(key) is not None else value
                for key, value in first_run.items()}
        record = {**kept, **fields, "resumes": list(previous.get("resumes") or []) + [command]}
    else:
        record = {**first_run, **fields}
    with atomic_path(path) as written:  # replaced whole, as a resume reads it back
        written.write_text(json.dumps(record, indent=2), encoding="utf-8")


ParamKey = Tuple[int, str]  # the optimizer's key of a parameter: (its model node's or shim's id, its name)


def parameter_holders(nlp: "Language") -> Dict[ParamKey, Tuple[str, Any]]:
    """Each parameter's optimizer key -> (where it sits, "component/walk index[/shim j]|name", and
    the model node or shim that holds it).

    The place is the same in every process that builds the same pipeline, unlike the ids the
    optimizer keys its state on. Keys are per parameter, not per holder: thinc numbers model
    nodes and shims with two counters, so a node and a shim can share an id (in a fresh process
    the elmo component's shim and its model node are both 1); the parameter's name tells them
    apart, as it does for thinc's optimizer.
    """
    from thinc.api import Model

    holders: Dict[ParamKey, Tuple[str, Any]] = {}
    for component_name, component in nlp.pipeline:
        model = getattr(component, "model", None)
        if not isinstance(model, Model):
            continue
        for i, node in enumerate(model.walk()):
            for name in node.param_names:
                holders.setdefault((node.id, name), (f"{component_name}/{i}|{name}", node))
            for j, shim in enumerate(node.shims):
                for name in _torch_parameters(shim):
                    holders.setdefault((shim.id, name), (f"{component_name}/{i}/shim{j}|{name}", shim))
    return holders


def parameter_owners(nlp: "Language") -> Dict[ParamKey, str]:
    """Each parameter's optimizer key -> where it sits (`parameter_holders`' places)."""
    return {key: place for key, (place, _) in parameter_holders(nlp).items()}


def optimizer_state(optimizer: "Optimizer", owners: Dict[ParamKey, str]) -> Dict[str, Dict[str, Any]]:
    """Adam's moments, averages and update counts, keyed by each parameter's place ("owner|parameter"),
    on the host (on a GPU thinc keeps them as cupy arrays, which `numpy.asarray` refuses)."""
    from thinc.util import to_numpy

    state: Dict[str, Dict[str, Any]] = {}
    for table in _OPTIMIZER_TABLES:
        values = getattr(optimizer, table) or {}
        state[table] = {owners[k]: to_numpy(v) for k, v in values.items() if k in owners}
    for table in _OPTIMIZER_COUNTS:
        state[table] = {owners[k]: int(v) for k, v in getattr(optimizer, table).items() if k in owners}
    return state


def _optimizer_key(ids: Dict[str, ParamKey], saved: str, what: str) -> ParamKey:
    """This pipeline's optimizer key of the parameter a training state names by place."""
    if saved not in ids:
        raise ResumeError(f"the {what} names {saved!r}, which this pipeline does not have: "
                          "model-last was saved by a different pipeline; start afresh with --overwrite "
                          "(in place of --resume)")
    return ids[saved]


def set_optimizer_state(optimizer: "Optimizer", owners: Dict[ParamKey, str], state: Dict[str, Dict[str, Any]],
                        ops: Any = None) -> None:
    """Put `optimizer_state`'s tables back, keyed on this pipeline's ids, as arrays of `ops` (by default
    the current ops: on a GPU thinc's Adam and averaging are cupy kernels, which refuse numpy arrays)."""
    from thinc.api import get_current_ops

    ops = ops if ops is not None else get_current_ops()
    ids = {place: key for key, place in owners.items()}
    for table in _OPTIMIZER_TABLES:
        if state.get(table) and getattr(optimizer, table) is None:
            raise ResumeError(f"the checkpoint has optimizer {table} but this optimizer keeps none")
        if getattr(optimizer, table) is not None:
            getattr(optimizer, table).update(
                {_optimizer_key(ids, k, "optimizer state"): ops.asarray_f(numpy.array(v, dtype="float32"))
                 for k, v in state[table].items()}
            )
    for table in _OPTIMIZER_COUNTS:
        getattr(optimizer, table).update(
            {_optimizer_key(ids, k, "optimizer state"): int(v) for k, v in state[table].items()}
        )


def _torch_parameters(shim: "Shim") -> Dict[str, Any]:
    """A PyTorch shim's parameters by the names its finish_update gives the optimizer ({} for others)."""
    module = getattr(shim, "_model", None)
    return dict(module.named_parameters()) if isinstance(module, torch.nn.Module) else {}


def live_parameters(nlp: "Language", optimizer: "Optimizer") -> Dict[str, Any]:
    """The current values of the parameters the optimizer keeps averages of, keyed by place
    (copies, on the host): what model-last, saved with the averages in place, does not hold."""
    from thinc.api import Model
    from thinc.util import to_numpy

    holders = parameter_holders(nlp)
    live: Dict[str, Any] = {}
    for key in optimizer.averages or {}:
        if key not in holders:
            continue
        place, holder = holders[key]
        name = key[1]
        if isinstance(holder, Model):
            if holder.has_param(name):
                live[place] = numpy.array(to_numpy(holder.get_param(name)), copy=True)
        else:
            live[place] = _torch_parameters(holder)[name].detach().cpu().numpy().copy()
    return live


def set_live_parameters(nlp: "Language", live: Dict[str, Any]) -> None:
    """Put `live_parameters`' values back into this pipeline, in place of the averages it was loaded with."""
    from thinc.api import Model

    holders = parameter_holders(nlp)
    ids = {place: key for key, (place, _) in holders.items()}
    for place, value in live.items():
        key = _optimizer_key(ids, place, "saved parameters")
        holder, name = holders[key][1], key[1]
        array: Any = numpy.array(value)  # a copy: msgpack's arrays are read-only views of its buffer
        if isinstance(holder, Model):
            current = holder.get_param(name) if holder.has_param(name) else None
            if current is None or tuple(current.shape) != array.shape:
                raise ResumeError(f"the saved parameter {place!r} does not fit this pipeline's "
                                  f"({None if current is None else tuple(current.shape)}, saved {array.shape})")
            holder.set_param(name, holder.ops.asarray_f(array, dtype=current.dtype))
        else:
            param = _torch_parameters(holder)[name]
            if tuple(param.shape) != array.shape:
                raise ResumeError(f"the saved parameter {place!r} does not fit this pipeline's "
                                  f"({tuple(param.shape)}, saved {array.shape})")
            with torch.no_grad():
                param.copy_(torch.from_numpy(array).to(device=param.device, dtype=param.dtype))


def epoch_batches(examples: List, batcher: Callable, seed: int, max_epochs: int) -> Iterator[Tuple[int, list]]:
    """(epoch, batch) pairs; each epoch's order is a shuffle seeded by (seed, epoch) alone, so that a
    resumed run can replay the batches it already trained on without training."""
    epoch = 0
    while max_epochs < 1 or epoch < max_epochs:
        order = list(examples)
        random.Random(seed * 1_000_003 + epoch).shuffle(order)
        for batch in batcher(order):
            yield epoch, batch
        epoch += 1


def _replace_dir(written: Path, final: Path) -> None:
    """Give a finished directory its final name, keeping the old one until the new one is in place.
    The new one's files reach the disk before the renames, and the renames before the old one goes:
    after a power loss the checkpoint is the old one or the new one, whole."""
    old = final.with_name(final.name + ".old")
    if old.exists():
        shutil.rmtree(old)
    fsync_tree(written)
    if final.exists():
        final.rename(old)
    written.rename(final)
    fsync_directory(final.parent)
    if old.exists():
        shutil.rmtree(old)


def _recover_dir(final: Path) -> None:
    """A run killed between the renames of `_replace_dir` left only NAME.old: put it back."""
    old = final.with_name(final.name + ".old")
    if not final.exists() and old.exists():
        old.rename(final)


def recover_output(output: PathLike) -> None:
    """Put back model-last and model-best where a run killed between the two renames that replace
    them (`_replace_dir`) left only NAME.old. Call it before anything loads or reads the run
    (`read_state` does): else --resume finds no model-last, and a fresh start takes the run for none."""
    for name in (MODEL_LAST, MODEL_BEST):
        _recover_dir(Path(output) / name)


@contextmanager
def stop_on_signals(stop: threading.Event, received: Optional[List[str]] = None) -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP (a closed terminal, a dropped ssh session) set `stop` (the loop
    saves and ends after the step it is in); a second SIGINT interrupts at once. Each signal's name
    is appended to `received` (the command's exit status says which one stopped it). Outside the
    main thread nothing is installed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Optional[FrameType]) -> None:
        if received is not None:
            received.append(signal.Signals(signum).name)
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def parse_minutes(value: str) -> float:
    """--max-minutes' value: a finite number >= 0 (-1 trained one step and exited 3, nan set no limit)."""
    try:
        minutes = float(value)
    except ValueError:
        minutes = math.nan
    if not math.isfinite(minutes) or minutes < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number of minutes >= 0 (0: no limit), not {value!r}")
    return minutes


def corpus_problem(option: str, path: PathLike) -> Optional[str]:
    """Why the gold corpus `path` given as `option` (--train, --dev) cannot be trained on, in one line
    (None: it can): missing, or a file not named *.spacy, which spaCy's reader skips. A CoNLL-U file
    given there trained on nothing (tag_acc 0.0 at every evaluation, exit 0) or failed with spaCy's
    advice to call add_label."""
    path = Path(path)
    if not path.exists():
        return f"{option} {path}: no such file or folder"
    if path.is_file() and path.suffix != ".spacy":
        return (f"{option} {path}: not named *.spacy, and spaCy reads gold data only from .spacy files; rename it if "
                "it is a DocBin, or convert it first (python -m spacy_elmo corpus ud FILE.conllu OUT.spacy)")
    return None


def use_gpu_or_exit(gpu_id: int) -> None:
    """thinc's require_gpu for --gpu-id N >= 0, or exit with one line where it cannot (no CuPy, no GPU)."""
    if gpu_id < 0:
        return
    from thinc.api import require_gpu

    try:
        require_gpu(gpu_id)
    except (ValueError, RuntimeError) as err:
        sys.exit(f"--gpu-id {gpu_id}: spaCy cannot use the GPU ({err}); --gpu-id -1 trains on the CPU")


def add_resume_options(parser: argparse.ArgumentParser) -> None:
    """--max-minutes, --resume and --overwrite, as scripts/train.py and scripts/finetune.py take them."""
    parser.add_argument("--max-minutes", type=parse_minutes, default=0.0,
                        help="stop (and save model-last) after this many minutes of training in this session; "
                        f"the exit status is then {EXIT_TIME_BUDGET} (unfinished: --resume continues it)")
    parser.add_argument("--resume", action="store_true", help="continue the interrupted run in OUTPUT_DIR")
    add_overwrite_option(parser, "start afresh even where OUTPUT_DIR holds a run, finished or not (it is lost)")


def parse_bool(value: str) -> bool:
    """A command line's true or false (true/false, yes/no, on/off, 1/0, any case), as a workflow's
    variable spells it (`spacy project run` writes a YAML boolean as "true" or "false")."""
    word = str(value).strip().lower()
    if word in ("true", "yes", "on", "1"):
        return True
    if word in ("false", "no", "off", "0"):
        return False
    raise argparse.ArgumentTypeError(
        f"expected true or false, not {value!r} (--overwrite takes an optional value: write it after the "
        "positional arguments, or as --overwrite=true)"
    )


def add_overwrite_option(parser: argparse.ArgumentParser, help: str) -> None:
    """--overwrite [BOOL]: alone, true; with a value, that value (`--overwrite=false` is as if it were not
    given), so that a workflow passes a variable to it (project.yml: `--overwrite=${vars.overwrite}`)."""
    parser.add_argument("--overwrite", nargs="?", const=True, default=False, type=parse_bool, metavar="BOOL",
                        help=f"{help}; --overwrite=false: as if not given (default: false)")


def occupied_output(output: PathLike, overwrite: bool) -> Optional[str]:
    """Why a script that writes a whole folder may not write OUTPUT (None: it may): OUTPUT exists and
    is a file or a folder that is not empty, and `overwrite` was not given. Written over, such a
    folder kept the files (components) of what it held beside the new ones."""
    output = Path(output)
    if overwrite or not output.exists() or (output.is_dir() and not any(output.iterdir())):
        return None
    what = "a folder that is not empty" if output.is_dir() else "a file"
    return f"{output}: exists and is {what}; pass --overwrite to replace it, or choose another output"


def open_run_log(output: PathLike, resume: bool) -> IO[str]:
    """OUTPUT/train.log for scripts/train.py and scripts/finetune.py, opened to append (--resume) or
    afresh, OUTPUT made where it is missing; the script exits with one line where it cannot be written."""
    output = Path(output)
    try:
        output.mkdir(parents=True, exist_ok=True)
        return open(output / "train.log", "a" if resume else "w", encoding="utf-8")
    except OSError as err:
        sys.exit(f"{output}: cannot write there ({err.strerror or err})")


def resume_record_or_exit(output: PathLike, given: Callable[[], Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """For scripts/train.py and scripts/finetune.py, before --resume loads anything: the run's record
    (run_settings.json; None for a run from before them), checked with its training state and the files
    it recorded by contents (`check_resumable`: a damaged record failed the run only after it had
    finished training, a corpus changed since it started would mix two runs), or the script exits with
    one line naming the file or difference. `given()`: the settings the resuming command gives, as
    run_settings records them; those that differ from the record are ignored, and a line says so."""
    try:
        record = check_resumable(output)
    except ResumeError as err:
        sys.exit(f"cannot resume: {err}")
    ignored = ignored_arguments(record, given())
    if ignored:
        print(f"{output}: --resume goes on with the run as recorded in its run_settings.json, not with these "
              f"arguments: {'; '.join(ignored)}", file=sys.stderr)
    return record


def lock_output_or_exit(output: PathLike, kind: str = "") -> RunLock:
    """The `RunLock` of the run writing OUTPUT (hidden, beside it), for scripts/train.py, finetune.py,
    adapt.py and pretrain.py to hold from their first check to their exit: a second run on OUTPUT (two
    `--resume`s a job scheduler started at once) exits with one line instead of interleaving the two
    runs' logs and checkpoints and crashing on the other's half-saved model-last. `kind` "pretrain":
    the lock the `pretrain` command's own run holds there (the scripts take it around deleting a
    folder for --overwrite, so that a live run is refused, not deleted)."""
    try:
        return output_lock(Path(output), kind)
    except OutputBusyError as err:
        sys.exit(str(err))


def output_folder_problem(output: PathLike) -> Optional[str]:
    """Why a run cannot be written into the folder OUTPUT (None: it can): OUTPUT, or the nearest of its
    parents that exists, is not a folder. --overwrite does not change that: it replaces a run, never
    a file of another kind. Checked before anything is loaded or written (mkdir's FileExistsError
    came as a traceback after the pipeline had been initialized)."""
    output = Path(output)
    if output.exists() and not output.is_dir():
        return f"{output}: exists and is a file, not a directory; choose another output directory"
    if output.is_symlink() and not output.exists():
        return f"{output}: a symbolic link to nothing (a missing folder, or a loop); choose another output directory"
    if not output.exists():
        above = next((p for p in output.absolute().parents if p.exists()), None)
        if above is not None and not above.is_dir():
            return f"{output}: {above} is a file, not a directory; choose another output directory"
    return None


def check_training(training: Dict[str, Any], max_minutes: float = 0.0) -> None:
    """Raise TrainingSettingsError, naming the setting, for a [training] block (resolved, or a config's
    interpolated values) or a time budget the loop cannot run with.

    eval_frequency 0 failed with a ZeroDivisionError after run_settings.json had been written, a
    negative max_epochs, max_steps or patience ended or refused the run at its first step."""
    for key, least in (("eval_frequency", 1), ("max_epochs", 0), ("max_steps", 0), ("patience", 0)):
        value = training.get(key)
        if value is None:
            continue  # spaCy's default fills it
        if not _is_count(value) or value < least:
            zero = {"max_epochs": " (0: no limit)", "max_steps": " (0: no limit)", "patience": " (0: none)"}
            raise TrainingSettingsError(f"training.{key} must be an integer >= {least}{zero.get(key, '')}, "
                                        f"got {value!r}")
    if not math.isfinite(max_minutes) or max_minutes < 0:
        raise TrainingSettingsError(f"--max-minutes must be a finite number >= 0 (0: no limit), got {max_minutes}")


def clear_output(output: PathLike) -> None:
    """Delete OUTPUT, a folder or a file, where it exists: what --overwrite replaces whole."""
    output = Path(output)
    if output.is_dir() and not output.is_symlink():
        shutil.rmtree(output)
    elif output.exists() or output.is_symlink():
        output.unlink()


def train_resumable(
    nlp: Any,  # a spaCy Language (spaCy's types reject the calls its own training loop makes: sgd=False)
    output: Path,
    *,
    resume: bool = False,
    overwrite: bool = False,
    max_minutes: float = 0.0,
    use_gpu: int = -1,
    stdout: Optional[Any] = None,
    stop: Optional[threading.Event] = None,
    settings: Optional[Dict[str, Any]] = None,
    resume_checked: bool = False,
) -> Dict[str, Any]:
    """Train `nlp` with its [training] block into `output`; return the final training state.

    A fresh start (resume False) refuses an output directory whose model-last
    is an unfinished run, unless `overwrite`; one whose run has finished is kept
    (its state returned, nothing trained) when `settings` (what defines the run;
    by default `pipeline_settings(nlp)`) are those it recorded in
    run_settings.json, and refused (SettingsChanged) when not, unless `overwrite`.
    Messages and the console table go to `stdout` (anything with `write`;
    sys.stdout by default). `stopped` in the state says why it ended: "early
    stopping", "max steps", "max epochs", "time budget" (max_minutes spent in
    this call) or "interrupted" (a signal, whose name is then `signal`, or `stop`
    set by the caller); the last two can be resumed (`exit_status` gives a
    command's exit status for each). An exception propagates and leaves
    model-last as the last evaluation saved it, resumable too. `resume_checked`: the caller has run
    `check_resumable` on `output` already (the scripts, before loading model-last), so the run's
    record and inputs are not read and hashed a second time.
    """
    from spacy.schemas import ConfigSchemaTraining
    from spacy.training.loop import create_before_to_disk_callback, create_evaluation_callback, subdivide_batch
    from spacy.training.loop import update_meta
    from spacy.util import registry, resolve_dot_names
    from thinc.api import constant, fix_random_seed, set_gpu_allocator

    stdout = stdout or sys.stdout
    msg = Printer(no_print=True)
    output = Path(output)
    config = nlp.config.interpolate()
    T = registry.resolve(config["training"], schema=ConfigSchemaTraining)
    check_training(T, max_minutes)  # before anything is read or written
    seed = config["training"]["seed"] or 0
    if use_gpu >= 0 and T["gpu_allocator"]:
        set_gpu_allocator(T["gpu_allocator"])
    recover_output(output)
    saved = _resumable_state(output, checked=resume_checked) if resume else None
    if saved is not None and saved["stopped"] in FINISHED:
        stdout.write(msg.info(f"{output}: training had already ended ({saved['stopped']})") + "\n")
        return saved
    train_corpus, dev_corpus = resolve_dot_names(config, [T["train_corpus"], T["dev_corpus"]])
    optimizer, batcher, score_weights = T["optimizer"], T["batcher"], T["score_weights"]
    before_to_disk = create_before_to_disk_callback(T["before_to_disk"])
    frozen, annotating = T["frozen_components"], T["annotating_components"]
    dropouts: Iterator[float] = iter(constant(T["dropout"]) if isinstance(T["dropout"], float) else T["dropout"])
    examples = list(train_corpus(nlp))
    if not examples:
        raise TrainingSettingsError(f"{config['paths'].get('train')}: no training examples (an empty corpus?)")
    evaluate = create_evaluation_callback(nlp, dev_corpus, score_weights)
    owners = parameter_owners(nlp)
    batches = epoch_batches(examples, batcher, seed, T["max_epochs"])

    # losses and words: what the next log row sums since the last evaluation, and the words trained on
    state: Dict[str, Any] = {"step": 0, "epoch": 0, "best_score": None, "best_step": None, "seconds": 0.0,
                             "stopped": None, "signal": None, "losses": {}, "words": 0}
    if saved is not None:
        state.update(saved, stopped=None, signal=None)
        extra = _read_extra(output / MODEL_LAST / STATE_MSG)
        _restore_extra(nlp, optimizer, owners, extra, output / MODEL_LAST / STATE_MSG, stdout, msg)
        for _ in range(state["step"]):  # the schedules and the batches where the run stopped
            optimizer.step_schedules()
            next(dropouts)
            next(batches)
        _truncate_log(output / LOG, state["step"])
        _repair_model_best(output, saved, stdout, msg)
    else:
        settings = pipeline_settings(nlp) if settings is None else settings
        kept = finished_run_kept(output, settings, overwrite)
        if kept is not None:  # this very run, finished: hours of training are not thrown away
            stdout.write(msg.info(kept) + "\n")
            return read_state(output) or state
        fix_random_seed(seed)
        # the state first: a kill amid the deletion leaves no finished run for a later start to keep
        (output / MODEL_LAST / STATE_JSON).unlink(missing_ok=True)
        for name in (MODEL_LAST, MODEL_BEST):
            if (output / name).exists():
                shutil.rmtree(output / name)
        # where the settings are recorded: the wall time of a run --overwrite replaces is not this run's (its
        # command and overrides would be kept by this run's --resume after a kill before its first write)
        (output / WALL_TIME).unlink(missing_ok=True)
        record_settings(output, settings)
        (output / LOG).write_text("", encoding="utf-8")

    def averaged() -> ContextManager[Any]:
        """The optimizer's parameter averages in place (spaCy evaluates and saves with them), if it keeps any."""
        return nlp.use_params(optimizer.averages) if optimizer.averages else nullcontext()

    def save(is_best: bool) -> None:
        """Write model-last (and, at a best evaluation, model-best first: see `_write_best`)."""
        written = output / (MODEL_LAST + ".tmp")
        if written.exists():
            shutil.rmtree(written)
        # what training goes on from: the pipeline's files hold the averages, as spaCy's model-last does
        live = live_parameters(nlp, optimizer)
        with averaged():
            before_to_disk(nlp).to_disk(written)
        (written / STATE_JSON).write_text(json.dumps(state, indent=2), encoding="utf-8")
        rng = rng_state()  # pretraining's checkpoints keep the same three generators
        extra = {"optimizer": optimizer_state(optimizer, owners), "rng": dict(rng, torch=rng["torch"].numpy()),
                 "live": live}
        (written / STATE_MSG).write_bytes(srsly.msgpack_dumps(extra))
        if is_best:
            _write_best(written, output)
        _replace_dir(written, output / MODEL_LAST)

    stdout.write(msg.info(f"Pipeline: {nlp.pipe_names}") + "\n")
    if resume:
        stdout.write(msg.info(f"Resuming at step {state['step']} (best score {state['best_score']} at step "
                              f"{state['best_step']})") + "\n")
    with nlp.select_pipes(disable=frozen):
        log_step, finalize_logger = T["logger"](nlp, stdout, sys.stderr)
    started, spent_before = time.monotonic(), state["seconds"]
    stop = stop or threading.Event()
    received: List[str] = []
    losses: Dict[str, float] = dict(state["losses"])  # a resumed run's since its last evaluation
    words = int(state["words"])
    try:
        with stop_on_signals(stop, received):
            for epoch, batch in batches:
                step = state["step"]
                if T["before_update"]:
                    T["before_update"](nlp, {"step": step, "epoch": epoch})
                dropout = next(dropouts)
                for subbatch in subdivide_batch(batch, T["accumulate_gradient"]):
                    nlp.update(subbatch, drop=dropout, losses=losses, sgd=False, exclude=frozen,
                               annotates=annotating)
                for name, component in nlp.pipeline:
                    if (name not in frozen and getattr(component, "is_trainable", False)
                            and component.model not in (True, False, None)):
                        component.finish_update(optimizer)
                optimizer.step_schedules()
                words += sum(len(eg) for eg in batch)
                _as_floats(losses)
                state.update(step=step + 1, epoch=epoch, seconds=round(spent_before + time.monotonic() - started, 1),
                             losses=dict(losses), words=words)
                if step % T["eval_frequency"] == 0:
                    with averaged():
                        score, other_scores = evaluate()
                    is_best = state["best_score"] is None or score > state["best_score"]
                    if is_best:
                        state.update(best_score=score, best_step=step)
                    info = {"epoch": epoch, "step": step, "score": score, "other_scores": other_scores,
                            "losses": losses, "checkpoints": [], "seconds": int(state["seconds"]), "words": words}
                    with nlp.select_pipes(disable=frozen):
                        update_meta(T, nlp, info)
                    losses = {}
                    state["losses"] = {}  # in this row: the next one sums from here
                    # an end this evaluation reaches goes into its checkpoint: a run killed before the
                    # final save below resumes as ended, not one step further
                    state["stopped"] = _end_reached(T, state, step)
                    # the row before the checkpoint: a run killed between them resumes from the previous
                    # checkpoint, whose resume drops this row (`_truncate_log`) and writes it again
                    _append_log(output / LOG, info, score_weights)
                    save(is_best)
                    log_step(info)
                else:
                    log_step(None)
                if not state["stopped"]:
                    state["stopped"] = _end_reached(T, state, step)
                if not state["stopped"]:
                    if max_minutes and time.monotonic() - started >= max_minutes * 60:
                        state["stopped"] = "time budget"
                    elif stop.is_set():
                        state.update(stopped="interrupted", signal=received[0] if received else None)
                if state["stopped"]:
                    break
            else:
                state["stopped"] = "max epochs"
    finally:
        # an exception (a second Ctrl-C among them) may come in the middle of a step: then
        # model-last stays the last evaluation's, whose state resumes (or, where that evaluation
        # ended the run, says so)
        finalize_logger()
    fault_point("train.end")
    save(False)
    stdout.write(msg.good(f"Stopped at step {state['step']} ({state['stopped']}); best score "
                          f"{state['best_score']} at step {state['best_step']}", output / MODEL_BEST) + "\n")
    return state


def _end_reached(T: Dict[str, Any], state: Dict[str, Any], step: int) -> Optional[str]:
    """The end of training that `step` (just trained) reaches by the config: "early stopping" (no
    better evaluation for `patience` steps) or "max steps"; None before either."""
    if T["patience"] and state["best_step"] is not None and step - state["best_step"] >= T["patience"]:
        return "early stopping"
    if T["max_steps"] and step >= T["max_steps"]:
        return "max steps"
    return None


def _resumable_state(output: Path, checked: bool = False) -> Dict[str, Any]:
    """The training state --resume goes on from (model-last's), after checking that it can: ResumeError
    where there is none, SettingsChanged where the run's recorded inputs have changed (`check_inputs`;
    not for a finished run, which trains nothing more). Read before the corpora, so nothing of a
    refused run is read for nothing, nor written. `checked`: the caller has checked them already."""
    if not checked:
        check_resumable(output)
    saved = read_state(output)
    if saved is None:
        raise ResumeError(f"{output / MODEL_LAST}: no training state to resume (was it written by "
                          "train_resumable?); start afresh without --resume")
    return saved


def _read_extra(path: Path) -> Dict[str, Any]:
    """training_state.msg as `save` wrote it: a ResumeError naming the file and --overwrite where it is
    damaged (empty, truncated, other bytes), which was msgpack's or a KeyError's traceback."""
    damaged = f"{path}: not a training state (%s); start afresh with --overwrite"
    try:
        extra = srsly.msgpack_loads(path.read_bytes())
    except OSError as err:
        raise ResumeError(damaged % (err.strerror or err)) from None
    except Exception as err:  # any bytes: msgpack's errors, and numpy's for an array it describes wrongly
        raise ResumeError(damaged % " ".join(str(err).split())) from None
    if not isinstance(extra, dict) or not isinstance(extra.get("optimizer"), dict):
        raise ResumeError(damaged % "no optimizer state")
    rng = extra.get("rng")
    if not isinstance(rng, dict) or not {"python", "numpy", "torch"} <= set(rng):
        raise ResumeError(damaged % "no random generators' state")
    if not isinstance(extra.get("live", {}), dict):
        raise ResumeError(damaged % "its parameters are not a table")
    return extra


def _restore_extra(nlp: "Language", optimizer: "Optimizer", owners: Dict[ParamKey, str], extra: Dict[str, Any],
                   path: Path, stdout: Any, msg: Printer) -> None:
    """Put back what training_state.msg (`path`) holds: the optimizer's state, the parameters apart from
    their averages, the random generators. Values of the wrong kind are a ResumeError naming the file
    (a ResumeError of their own, naming a parameter, stays as it is)."""
    try:
        set_optimizer_state(optimizer, owners, extra["optimizer"])
        if "live" in extra:
            set_live_parameters(nlp, extra["live"])
        elif extra["optimizer"].get("averages"):
            note = (f"{path} was written before training states kept the parameters apart from their "
                    "averages: training goes on from the averaged weights model-last holds, so it will not "
                    "end exactly where the uninterrupted run would have")
            warnings.warn(note, ResumeWarning)
            stdout.write(msg.warn(note) + "\n")
        rng = dict(extra["rng"], torch=torch.from_numpy(numpy.array(extra["rng"]["torch"], dtype=numpy.uint8)))
        set_rng_state(rng)
    except ResumeError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, RuntimeError) as err:
        raise ResumeError(f"{path}: not a training state ({type(err).__name__}: {' '.join(str(err).split())}); "
                          "start afresh with --overwrite") from None


def _write_best(written: Path, output: Path, state: Optional[Dict[str, Any]] = None) -> None:
    """Copy the checkpoint `written` (model-last.tmp, a best evaluation's) to model-best, before it
    replaces model-last (`state`: the training_state.json the copy holds instead of `written`'s).

    In that order a kill at any point leaves no model-last that records an evaluation as the best
    without its model-best: killed before model-best is in place, model-last is the previous one and
    --resume makes this evaluation again; killed after, model-best is one evaluation ahead of
    model-last, and --resume's replay of that evaluation writes it again. The other order left a
    model-best from an earlier evaluation for good, the resumed run exiting 0."""
    copied = output / (MODEL_BEST + ".tmp")
    if copied.exists():
        shutil.rmtree(copied)
    shutil.copytree(written, copied)
    if state is not None:
        (copied / STATE_JSON).write_text(json.dumps(state, indent=2), encoding="utf-8")
    _replace_dir(copied, output / MODEL_BEST)


def _repair_model_best(output: Path, saved: Dict[str, Any], stdout: Any, msg: Printer) -> None:
    """On --resume: rewrite model-best from model-last where it is not the best evaluation's that
    model-last records, and model-last holds that evaluation's weights (saved at it, or stopped right
    after it): what a kill while model-best was written left before `_write_best` came first.

    A model-best ahead of model-last is left (the replay writes it again); one that cannot be put
    right (model-last trained on since) is a ResumeWarning, the remedy named."""
    best_step = saved.get("best_step")
    if best_step is None:
        return
    best_state = _best_state(output) or {}
    best_at, best_saved_at = best_state.get("best_step"), best_state.get("step")
    if best_at == best_step or (_is_count(best_saved_at) and best_saved_at > saved["step"]):
        return
    held = "none" if best_at is None else f"step {best_at}'s"
    if saved["step"] != best_step + 1:
        note = (f"{output / MODEL_BEST} is not the best evaluation's (step {best_step}; it holds {held}) and "
                "model-last has trained on since, so it cannot be rewritten: start afresh with --overwrite "
                "for a model-best of this run")
        warnings.warn(note, ResumeWarning)
        stdout.write(msg.warn(note) + "\n")
        return
    # as it was saved at that evaluation: not yet stopped
    state = dict(json.loads((output / MODEL_LAST / STATE_JSON).read_text(encoding="utf-8")), stopped=None, signal=None)
    _write_best(output / MODEL_LAST, output, state)
    stdout.write(msg.info(f"{output / MODEL_BEST}: rewritten from model-last, which holds the best evaluation "
                          f"(step {best_step}; model-best held {held})") + "\n")


def _best_state(output: Path) -> Optional[Dict[str, Any]]:
    """model-best's training_state.json (None where there is none, or it is not a JSON object)."""
    path = output / MODEL_BEST / STATE_JSON
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def _as_floats(losses: Dict[str, Any]) -> None:
    """Each loss as a Python float, in place: what a component added may be a numpy scalar, and the
    sums a resumed run goes on from (training_state.json) are floats, so both runs sum alike."""
    for name, value in losses.items():
        losses[name] = float(value)


def _append_log(path: Path, info: Dict[str, Any], score_weights: Dict[str, Any]) -> None:
    """One evaluation row in the format of spaCy's ConsoleLogger.v3 output_file.

    The whole line, newline included, goes in one unbuffered write: a run killed while appending
    leaves at worst a torn last line, which `read_log` leaves out."""
    scores = {}
    for col in (c for c, weight in score_weights.items() if weight is not None):
        value = float(info["other_scores"].get(col, 0.0))
        scores[col] = value if col == "speed" else value * 100
    row = {"epoch": info["epoch"], "step": info["step"], "losses": {k: float(v) for k, v in info["losses"].items()},
           "scores": scores, "score": float(info["score"])}
    with open(path, "ab", buffering=0) as f:
        f.write((srsly.json_dumps(row) + "\n").encode("utf-8"))


def _log_lines(path: Path) -> List[Tuple[str, Dict[str, Any]]]:
    """(line, row) for each row of a log.jsonl, leaving out a last line that is no row: one torn by a
    run killed while appending it. A bad line before the last is a ValueError naming the file and line.

    Each line is decoded on its own: a byte that is not UTF-8 makes that line no row (it failed the
    whole file with a UnicodeDecodeError that named neither)."""
    lines = [(number, raw) for number, raw in enumerate(path.read_bytes().splitlines(), 1) if raw.strip()]
    rows = []
    for i, (number, raw) in enumerate(lines):
        try:
            line = raw.decode("utf-8")
            row = json.loads(line)
            if not isinstance(row, dict) or not isinstance(row.get("step"), int):
                raise ValueError("no step")
        except ValueError as err:
            if i == len(lines) - 1:
                break  # torn while appended: the evaluation's row is written again on --resume
            why = f"{err.msg} at column {err.colno}" if isinstance(err, json.JSONDecodeError) else str(err)
            raise ValueError(f"{path}, line {number}: not a log row ({why})") from None
        rows.append((line, row))
    return rows


def read_log(path: PathLike) -> List[Dict[str, Any]]:
    """The evaluation rows of a log.jsonl ([] where there is none), as `_log_lines` reads them."""
    path = Path(path)
    return [row for _, row in _log_lines(path)] if path.is_file() else []


def _truncate_log(path: Path, steps_done: int) -> None:
    """Keep the rows of evaluations model-last had made (a later row belongs to a checkpoint lost, a
    torn last line to a row being appended when the run was killed)."""
    if not path.is_file():
        return
    try:
        rows = _log_lines(path)
    except ValueError as err:
        raise ResumeError(f"{err}: delete that line to resume, or start afresh with --overwrite") from None
    kept = "".join(line + "\n" for line, row in rows if row["step"] < steps_done)
    if kept.encode("utf-8") == path.read_bytes():
        return
    with atomic_path(path) as written:  # replaced whole: a kill or a full disk here loses no row
        written.write_text(kept, encoding="utf-8")


__all__ = [
    "train_resumable", "add_resume_options", "read_state", "ResumeError", "ResumeWarning", "stop_on_signals",
    "MODEL_LAST", "MODEL_BEST", "RUN_SETTINGS", "SettingsChanged", "path_identity", "settings_differences",
    "record_settings", "read_record", "keep_finished", "finished_run_kept", "check_unfinished",
    "overrides_by_contents", "add_overwrite_option", "corpus_problem", "use_gpu_or_exit", "occupied_output",
    "clear_output", "parse_bool",
    "pipeline_settings", "exit_status", "check_inputs", "check_resumable", "changed_inputs",
    "ignored_arguments", "resume_record_or_exit", "lock_output_or_exit", "output_folder_problem", "open_run_log",
    "check_training", "TrainingSettingsError", "parse_minutes", "WALL_TIME", "EXIT_TIME_BUDGET", "SIGNAL_EXIT", "Tee",
    "STOP_SIGNALS",
    "write_wall_time", "read_log", "recover_output",
]
