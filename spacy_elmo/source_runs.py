"""Whether the model a step starts from is the final model of a run that has finished.

A run's folder holds `model-best` from its first evaluation on, and `model-last` after each
evaluation (a training run) or once a signal stopped it (a pretraining run): that these exist says
nothing about whether the run reached its end. A step run by hand after a stopped one (the
project's `ewt-elmo` after `adapt-ewt` was interrupted, say) would otherwise go ahead on a
half-trained model without a word. `spacy project run all` stops at the stopped step, so the
workflow itself never got there; the scripts now refuse such a start too, naming the run and how
to finish it (`--allow-unfinished` starts from it anyway).

Two kinds of run are told apart by what their folders hold: a pretraining run (`spacy_elmo
pretrain`, scripts/pretrain.py, adapt.py: a biLM with elmo.json, the run's config.cfg beside it)
says whether it finished in model-last's metadata (`run_finished`); a pipeline training run
(scripts/train.py, finetune.py) in model-last's training state. A model outside such a folder (the
embedded biLM, a download, a converted model, a `spacy train` output) is not asked about.
The folders are only read: a run killed while it replaced model-last is recovered by its own next
command, not by a step that reads it.
"""
import json
from pathlib import Path
from typing import Any, Dict, Optional, Union

from .resumable_training import FINISHED, MODEL_BEST, MODEL_LAST, RUN_SETTINGS, STATE_JSON

ALLOW_OPTION = "--allow-unfinished"


def unfinished_run(model: Union[str, Path]) -> Optional[str]:
    """Why `model` is not the final model of a finished run (a phrase), or None where it is, or where
    `model` is not a run's model-best or model-last."""
    model = Path(model)
    if model.name not in (MODEL_BEST, MODEL_LAST) or not model.is_dir():
        return None
    run = model.parent
    if (model / "elmo.json").is_file() and ((run / "config.cfg").is_file() or (run / "checkpoint.pt").is_file()):
        return _unfinished_pretraining(run)
    if (model / "config.cfg").is_file() and _is_training_run(run):
        return _unfinished_training(run)
    return None


def _unfinished_pretraining(run: Path) -> Optional[str]:
    from .pretrain.trainer import run_finished

    if run_finished(run):
        return None
    if not (run / MODEL_LAST / "elmo.json").is_file():
        return f"the pretraining in {run} has no final model-last: it is still running, or was killed"
    return (f"the pretraining in {run} has not reached its end as far as its model-last records (stopped by a "
            "signal, or resumed with other limits; or written by an earlier version, which did not record it)")


def _is_training_run(run: Path) -> bool:
    """Whether `run` is a folder scripts/train.py or finetune.py writes (a run record or a training state)."""
    return (run / RUN_SETTINGS).is_file() or any(
        (run / name / STATE_JSON).is_file() for name in (MODEL_LAST, MODEL_LAST + ".old"))


def _unfinished_training(run: Path) -> Optional[str]:
    state = _read_state(run / MODEL_LAST / STATE_JSON) or _read_state(run / (MODEL_LAST + ".old") / STATE_JSON)
    if state is None:
        return f"the training in {run} has no training state in model-last: it is still running, or was killed"
    stopped, step = state.get("stopped"), state.get("step")
    if stopped in FINISHED:
        return None
    if stopped is None:
        return f"the training in {run} is still running, or was killed (its last checkpoint is at step {step})"
    if stopped == "time budget":
        return f"the training in {run} was stopped by its --max-minutes budget at step {step}"
    by = f" by {state['signal']}" if isinstance(state.get("signal"), str) else ""
    return f"the training in {run} was interrupted{by} at step {step}"


def _read_state(path: Path) -> Optional[Dict[str, Any]]:
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def unfinished_source_problem(model: Union[str, Path], what: str) -> Optional[str]:
    """The one-line refusal of a step about to start from `model` (`what`: the option or argument
    that named it), or None where the model is a finished run's (or no run's)."""
    reason = unfinished_run(model)
    if reason is None:
        return None
    return (f"{what} {model}: {reason}, so this is not its final model. Finish that run first (its own "
            "command again; scripts/train.py, finetune.py and `spacy_elmo pretrain` with --resume), or pass "
            f"{ALLOW_OPTION} to start from the model as it is")


def add_allow_unfinished_option(parser: Any) -> None:
    """The scripts' --allow-unfinished flag (argparse)."""
    parser.add_argument(ALLOW_OPTION, action="store_true",
                        help="start from a model whose run has not finished (stopped, or still running); "
                             "refused by default")


__all__ = ["ALLOW_OPTION", "add_allow_unfinished_option", "unfinished_run", "unfinished_source_problem"]
