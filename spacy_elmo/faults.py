"""Deterministic fault injection, for the reliability tests.

    SPACY_ELMO_FAULT="POINT:N:ACTION[,POINT:N:ACTION...]"

The N-th time (counting from 1) this process passes the named point, ACTION
happens. Tests use it instead of sending signals after a sleep, so a fault
lands at the same place on a fast machine and a busy one.

Points:
    embed.chunk        `embed`: a chunk of lines was written and flushed to OUTPUT.partial (HDF5), or a
                       part was committed (Parquet)
    pretrain.step      pretraining: a step's update is done (before its evaluation,
                       stop check and checkpoint)
    checkpoint.write   a checkpoint's temporary file is written, not yet renamed
                       over the previous checkpoint
    teacher_cache.batch  a teacher cache build wrote a batch's vectors (not yet
                       recorded as done, unless a progress record follows it)
    train.end          downstream training (`resumable_training`): the loop has ended, its
                       final model-last not yet written

Actions:
    kill     SIGKILL: the process ends at once, no handler, no cleanup
    term     SIGTERM, int SIGINT, hup SIGHUP: delivered to this process; its handlers run
    enospc   raise OSError(ENOSPC), as a full disk would

Unset (the default), a point costs one environment lookup.
"""
import errno
import os
import signal
from collections import Counter
from typing import Dict, Optional, Tuple

from .bilm.errors import SpacyElmoError

VARIABLE = "SPACY_ELMO_FAULT"
POINTS = ("embed.chunk", "pretrain.step", "checkpoint.write", "teacher_cache.batch", "train.end")
ACTIONS = ("kill", "term", "int", "hup", "enospc")


class FaultSpecError(SpacyElmoError, ValueError):
    pass


_parsed: Tuple[Optional[str], Dict[str, Tuple[int, str]]] = (None, {})
_passes: Counter = Counter()


def parse(spec: str) -> Dict[str, Tuple[int, str]]:
    """{point: (n, action)} from the variable's value; a clear error for anything else."""
    rules: Dict[str, Tuple[int, str]] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        fields = item.split(":")
        if len(fields) != 3 or not fields[1].isdigit() or int(fields[1]) < 1:
            raise FaultSpecError(f"{VARIABLE}: {item!r} is not POINT:N:ACTION with N >= 1")
        point, n, action = fields[0], int(fields[1]), fields[2]
        if point not in POINTS:
            raise FaultSpecError(f"{VARIABLE}: unknown point {point!r}; choose from {', '.join(POINTS)}")
        if action not in ACTIONS:
            raise FaultSpecError(f"{VARIABLE}: unknown action {action!r}; choose from {', '.join(ACTIONS)}")
        rules[point] = (n, action)
    return rules


def fault_point(name: str) -> None:
    """Mark a place where a test may inject a fault (see the module docstring)."""
    global _parsed
    spec = os.environ.get(VARIABLE)
    if not spec:
        return
    if _parsed[0] != spec:  # a new setting starts the counts again
        _parsed = (spec, parse(spec))
        _passes.clear()
    rule = _parsed[1].get(name)
    if rule is None:
        return
    _passes[name] += 1
    if _passes[name] == rule[0]:
        _act(rule[1], name)


def reset() -> None:
    """Start counting passes again (for tests that set the same faults twice in one process)."""
    global _parsed
    _parsed = (None, {})
    _passes.clear()


def _act(action: str, name: str) -> None:
    if action == "enospc":
        raise OSError(errno.ENOSPC, f"No space left on device (injected at {name})")
    sig = {"kill": signal.SIGKILL, "term": signal.SIGTERM, "int": signal.SIGINT, "hup": signal.SIGHUP}[action]
    signal.raise_signal(sig)


__all__ = ["fault_point", "parse", "reset", "FaultSpecError", "VARIABLE", "POINTS", "ACTIONS"]
