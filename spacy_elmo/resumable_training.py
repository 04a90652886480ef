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
  seconds spent) and `training_state.msg` (Adam's moments and averages
  keyed by where each parameter sits in the pipeline, the random number
  generators, and, where the optimizer keeps averages, the parameters'
  own values) beside the pipeline's files. As `spacy train` does, the
  pipeline is saved with the optimizer's averages in place when it keeps
  any (`use_averages = true`); the values training goes on from are those
  in `training_state.msg`;
- model-best: model-last as it was at the best evaluation;
- log.jsonl: one row per evaluation, as spaCy's ConsoleLogger.v3 writes it.

Each is replaced whole (written beside, then renamed), so a run killed while
saving keeps the previous one. `resume=True` loads nothing itself: the
caller passes `spacy.load(output / "model-last")`, and training goes on from
its step with the same batches (each epoch's order comes from the seed and
the epoch, and the batcher is replayed up to the step), the same learning
rate and dropout schedules, the optimizer's state, the parameters as they
were (not their averages), the best score and the patience left: it ends
where the uninterrupted run would have.
"""
import argparse
import json
import random
import shutil
import signal
import threading
import time
import warnings
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import numpy
import srsly
import torch
from wasabi import Printer

from .pretrain.checkpoint import rng_state, set_rng_state

MODEL_LAST, MODEL_BEST, LOG = "model-last", "model-best", "log.jsonl"
STATE_JSON, STATE_MSG = "training_state.json", "training_state.msg"
FINISHED = ("early stopping", "max steps", "max epochs")
"""Why a run ended that --resume has nothing to add to; any other state (a time budget, a signal, a
crash that left the last evaluation's checkpoint) can be resumed."""
_OPTIMIZER_TABLES = ("mom1", "mom2", "averages")
_OPTIMIZER_COUNTS = ("nr_update", "last_seen")


class ResumeError(ValueError):
    """An output directory that cannot be resumed: what is missing or does not match, and what to do."""


class ResumeWarning(UserWarning):
    """A run that resumes, but not exactly where it stopped (a training state from an older version)."""


def read_state(output: Path) -> Optional[Dict[str, Any]]:
    """The training state model-last holds (None when there is no model-last to resume)."""
    path = Path(output) / MODEL_LAST / STATE_JSON
    if not path.is_file():
        return None
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as err:
        raise ResumeError(f"{path}: not a training state ({err}); start afresh with --overwrite") from None
    missing = {"step", "epoch", "best_score", "best_step", "seconds", "stopped"} - set(state)
    if missing:
        raise ResumeError(f"{path}: the training state lacks {sorted(missing)}; start afresh with --overwrite")
    return state


ParamKey = Tuple[int, str]  # the optimizer's key of a parameter: (its model node's or shim's id, its name)


def parameter_holders(nlp) -> Dict[ParamKey, Tuple[str, Any]]:
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


def parameter_owners(nlp) -> Dict[ParamKey, str]:
    """Each parameter's optimizer key -> where it sits (`parameter_holders`' places)."""
    return {key: place for key, (place, _) in parameter_holders(nlp).items()}


def optimizer_state(optimizer, owners: Dict[ParamKey, str]) -> Dict[str, Dict[str, Any]]:
    """Adam's moments, averages and update counts, keyed by each parameter's place ("owner|parameter")."""
    state: Dict[str, Dict[str, Any]] = {}
    for table in _OPTIMIZER_TABLES:
        values = getattr(optimizer, table) or {}
        state[table] = {owners[k]: numpy.asarray(v) for k, v in values.items() if k in owners}
    for table in _OPTIMIZER_COUNTS:
        state[table] = {owners[k]: int(v) for k, v in getattr(optimizer, table).items() if k in owners}
    return state


def _optimizer_key(ids: Dict[str, ParamKey], saved: str, what: str) -> ParamKey:
    """This pipeline's optimizer key of the parameter a training state names by place."""
    if saved not in ids:
        raise ResumeError(f"the {what} names {saved!r}, which this pipeline does not have: "
                          "model-last was saved by a different pipeline; start afresh without --resume")
    return ids[saved]


def set_optimizer_state(optimizer, owners: Dict[ParamKey, str], state: Dict[str, Dict[str, Any]]) -> None:
    """Put `optimizer_state`'s tables back, keyed on this pipeline's ids."""
    ids = {place: key for key, place in owners.items()}
    for table in _OPTIMIZER_TABLES:
        if state.get(table) and getattr(optimizer, table) is None:
            raise ResumeError(f"the checkpoint has optimizer {table} but this optimizer keeps none")
        if getattr(optimizer, table) is not None:
            getattr(optimizer, table).update(
                {_optimizer_key(ids, k, "optimizer state"): numpy.array(v, dtype="float32")
                 for k, v in state[table].items()}
            )
    for table in _OPTIMIZER_COUNTS:
        getattr(optimizer, table).update(
            {_optimizer_key(ids, k, "optimizer state"): int(v) for k, v in state[table].items()}
        )


def _torch_parameters(shim) -> Dict[str, Any]:
    """A PyTorch shim's parameters by the names its finish_update gives the optimizer ({} for others)."""
    module = getattr(shim, "_model", None)
    return dict(module.named_parameters()) if isinstance(module, torch.nn.Module) else {}


def live_parameters(nlp, optimizer) -> Dict[str, Any]:
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


def set_live_parameters(nlp, live: Dict[str, Any]) -> None:
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
    """Give a finished directory its final name, keeping the old one until the new one is in place."""
    old = final.with_name(final.name + ".old")
    if old.exists():
        shutil.rmtree(old)
    if final.exists():
        final.rename(old)
    written.rename(final)
    if old.exists():
        shutil.rmtree(old)


def _recover_dir(final: Path) -> None:
    """A run killed between the renames of `_replace_dir` left only NAME.old: put it back."""
    old = final.with_name(final.name + ".old")
    if not final.exists() and old.exists():
        old.rename(final)


@contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT and SIGTERM set `stop` (the loop saves and ends after the step it is in); a second
    SIGINT interrupts at once. Outside the main thread nothing is installed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def add_resume_options(parser: argparse.ArgumentParser) -> None:
    """--max-minutes, --resume and --overwrite, as scripts/train.py and scripts/finetune.py take them."""
    parser.add_argument("--max-minutes", type=float, default=0.0,
                        help="stop (and save model-last) after this many minutes of training in this session")
    parser.add_argument("--resume", action="store_true", help="continue the interrupted run in OUTPUT_DIR")
    parser.add_argument("--overwrite", action="store_true",
                        help="start afresh even where OUTPUT_DIR holds an unfinished run (it is lost)")


def train_resumable(
    nlp,
    output: Path,
    *,
    resume: bool = False,
    overwrite: bool = False,
    max_minutes: float = 0.0,
    use_gpu: int = -1,
    stdout: Optional[Any] = None,
    stop: Optional[threading.Event] = None,
) -> Dict[str, Any]:
    """Train `nlp` with its [training] block into `output`; return the final training state.

    A fresh start (resume False) refuses an output directory whose model-last
    is an unfinished run, unless `overwrite`. Messages and the console table
    go to `stdout` (anything with `write`; sys.stdout by default).
    `stopped` in the state says why it ended: "early stopping", "max steps",
    "max epochs", "time budget" (max_minutes spent in this call) or "interrupted" (a
    signal, or `stop` set by the caller); the last two can be resumed. An
    exception propagates and leaves model-last as the last evaluation saved
    it, resumable too.
    """
    import sys

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
    seed = config["training"]["seed"] or 0
    if use_gpu >= 0 and T["gpu_allocator"]:
        set_gpu_allocator(T["gpu_allocator"])
    train_corpus, dev_corpus = resolve_dot_names(config, [T["train_corpus"], T["dev_corpus"]])
    optimizer, batcher, score_weights = T["optimizer"], T["batcher"], T["score_weights"]
    before_to_disk = create_before_to_disk_callback(T["before_to_disk"])
    frozen, annotating = T["frozen_components"], T["annotating_components"]
    dropouts: Iterator[float] = iter(constant(T["dropout"]) if isinstance(T["dropout"], float) else T["dropout"])
    if T["max_epochs"] < 0:
        raise ValueError("train_resumable shuffles a corpus it holds in memory: max_epochs must be >= 0 "
                         f"(0: no limit), got {T['max_epochs']}")
    examples = list(train_corpus(nlp))
    if not examples:
        raise ValueError(f"no training examples in {config['paths'].get('train')}")
    evaluate = create_evaluation_callback(nlp, dev_corpus, score_weights)
    owners = parameter_owners(nlp)
    batches = epoch_batches(examples, batcher, seed, T["max_epochs"])

    for name in (MODEL_LAST, MODEL_BEST):
        _recover_dir(output / name)
    state: Dict[str, Any] = {"step": 0, "epoch": 0, "best_score": None, "best_step": None, "seconds": 0.0,
                             "stopped": None}
    if resume:
        saved = read_state(output)
        if saved is None:
            raise ResumeError(f"{output / MODEL_LAST}: no training state to resume (was it written by "
                              "train_resumable?); start afresh without --resume")
        if saved["stopped"] in FINISHED:
            stdout.write(msg.info(f"{output}: training had already ended ({saved['stopped']})") + "\n")
            return saved
        state.update(saved, stopped=None)
        extra = srsly.msgpack_loads((output / MODEL_LAST / STATE_MSG).read_bytes())
        set_optimizer_state(optimizer, owners, extra["optimizer"])
        if "live" in extra:
            set_live_parameters(nlp, extra["live"])
        elif extra["optimizer"].get("averages"):
            note = (f"{output / MODEL_LAST / STATE_MSG} was written before training states kept the parameters "
                    "apart from their averages: training goes on from the averaged weights model-last holds, "
                    "so it will not end exactly where the uninterrupted run would have")
            warnings.warn(note, ResumeWarning)
            stdout.write(msg.warn(note) + "\n")
        for _ in range(state["step"]):  # the schedules and the batches where the run stopped
            optimizer.step_schedules()
            next(dropouts)
            next(batches)
        rng = dict(extra["rng"], torch=torch.from_numpy(numpy.array(extra["rng"]["torch"], dtype=numpy.uint8)))
        set_rng_state(rng)
        _truncate_log(output / LOG, state["step"])
    else:
        saved = read_state(output) if not overwrite else None
        if saved is not None and saved["stopped"] not in FINISHED:
            raise ResumeError(f"{output} holds an unfinished run (model-last at step {saved['step']}): continue it "
                              f"with --resume, or start afresh with --overwrite")
        fix_random_seed(seed)
        for name in (MODEL_LAST, MODEL_BEST):
            if (output / name).exists():
                shutil.rmtree(output / name)
        output.mkdir(parents=True, exist_ok=True)
        (output / LOG).write_text("", encoding="utf-8")

    def averaged():
        """The optimizer's parameter averages in place (spaCy evaluates and saves with them), if it keeps any."""
        return nlp.use_params(optimizer.averages) if optimizer.averages else nullcontext()

    def save(is_best: bool) -> None:
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
        _replace_dir(written, output / MODEL_LAST)
        if is_best:
            copied = output / (MODEL_BEST + ".tmp")
            if copied.exists():
                shutil.rmtree(copied)
            shutil.copytree(output / MODEL_LAST, copied)
            _replace_dir(copied, output / MODEL_BEST)

    stdout.write(msg.info(f"Pipeline: {nlp.pipe_names}") + "\n")
    if resume:
        stdout.write(msg.info(f"Resuming at step {state['step']} (best score {state['best_score']} at step "
                              f"{state['best_step']})") + "\n")
    with nlp.select_pipes(disable=frozen):
        log_step, finalize_logger = T["logger"](nlp, stdout, sys.stderr)
    started, spent_before = time.monotonic(), state["seconds"]
    stop = stop or threading.Event()
    losses: Dict[str, float] = {}
    words = 0
    try:
        with stop_on_signals(stop):
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
                state.update(step=step + 1, epoch=epoch,
                             seconds=round(spent_before + time.monotonic() - started, 1))
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
                    save(is_best)
                    _append_log(output / LOG, info, score_weights)
                    log_step(info)
                    losses = {}
                else:
                    log_step(None)
                if T["patience"] and state["best_step"] is not None and step - state["best_step"] >= T["patience"]:
                    state["stopped"] = "early stopping"
                elif T["max_steps"] and step >= T["max_steps"]:
                    state["stopped"] = "max steps"
                elif max_minutes and time.monotonic() - started >= max_minutes * 60:
                    state["stopped"] = "time budget"
                elif stop.is_set():
                    state["stopped"] = "interrupted"
                if state["stopped"]:
                    break
            else:
                state["stopped"] = "max epochs"
    finally:
        # an exception (a second Ctrl-C among them) may come in the middle of a step: then
        # model-last stays the last evaluation's, whose state (stopped: null) resumes
        finalize_logger()
    save(False)
    stdout.write(msg.good(f"Stopped at step {state['step']} ({state['stopped']}); best score "
                          f"{state['best_score']} at step {state['best_step']}", output / MODEL_BEST) + "\n")
    return state


def _append_log(path: Path, info: Dict[str, Any], score_weights: Dict[str, Any]) -> None:
    """One evaluation row in the format of spaCy's ConsoleLogger.v3 output_file."""
    scores = {}
    for col in (c for c, weight in score_weights.items() if weight is not None):
        value = float(info["other_scores"].get(col, 0.0))
        scores[col] = value if col == "speed" else value * 100
    row = {"epoch": info["epoch"], "step": info["step"], "losses": {k: float(v) for k, v in info["losses"].items()},
           "scores": scores, "score": float(info["score"])}
    with open(path, "a", encoding="utf-8") as f:
        f.write(srsly.json_dumps(row) + "\n")


def _truncate_log(path: Path, steps_done: int) -> None:
    """Keep the rows of evaluations model-last had made (a later row belongs to a checkpoint lost)."""
    if not path.is_file():
        return
    rows = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    kept = [line for line in rows if json.loads(line)["step"] < steps_done]
    path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")


__all__ = ["train_resumable", "add_resume_options", "read_state", "ResumeError", "ResumeWarning", "stop_on_signals",
           "MODEL_LAST", "MODEL_BEST"]
