"""Where a pretraining run stands: its position (checkpointed) and the running averages it logs."""
import signal
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional


@dataclass
class Progress:
    """The run's position, saved in every checkpoint as a plain mapping (checkpoint.py)."""

    step: int = 0
    epoch: int = 0
    batches_in_epoch: int = 0  # optimizer steps in this epoch
    tokens: int = 0
    elapsed: float = 0.0
    best: Optional[float] = None  # the best dev perplexity so far
    # how the processes share the text: "none" (one batch sequence) or "files" (shares.py)
    layout: str = "none"
    # "none": batches of the epoch's one sequence taken so far, by all processes together
    epoch_batches: int = 0
    # "files": the shares, their deal and every share's position (ShardedCorpus.state)
    shards: Optional[Dict[str, Any]] = None
    # the losses since the last log row (Window.state), so a resumed run logs the rows an
    # uninterrupted one would have: None in a checkpoint written before they were kept
    window: Optional[Dict[str, Any]] = None
    # the last evaluation's dev perplexities (the model-last written on a signal records them)
    last_eval: Optional[Dict[str, float]] = None

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    def update(self, saved: Dict[str, Any]) -> None:
        for key, value in saved.items():
            setattr(self, key, value)


@dataclass
class Window:
    """Training loss and tokens since the last evaluation."""

    loss: float = 0.0
    count: int = 0
    tokens: int = 0
    start: float = field(default_factory=time.perf_counter)

    def add(self, loss: float, tokens: int) -> None:
        self.loss += loss
        self.count += 1
        self.tokens += tokens

    def mean_loss(self) -> Optional[float]:
        return self.loss / self.count if self.count else None

    def tokens_per_second(self) -> float:
        return self.tokens / max(1e-9, time.perf_counter() - self.start)

    def reset(self) -> None:
        self.loss, self.count, self.tokens, self.start = 0.0, 0, 0, time.perf_counter()

    def state(self, distill: List[float]) -> Dict[str, Any]:
        """The sums as plain values for the checkpoint, with the distillation losses since the last row."""
        return {"loss": self.loss, "count": self.count, "tokens": self.tokens, "distill": list(distill)}

    def restore(self, saved: Optional[Dict[str, Any]]) -> List[float]:
        """Take back what `state` saved (None: an empty window); returns the distillation losses.
        Its clock starts now, and its token count at 0: tokens per second are this session's
        tokens over this session's time."""
        self.reset()
        if not saved:
            return []
        loss, count, tokens, distill = saved["loss"], saved["count"], saved["tokens"], saved["distill"]
        if not (isinstance(loss, (int, float)) and isinstance(count, int) and isinstance(tokens, int)
                and count >= 0 and tokens >= 0 and all(isinstance(v, (int, float)) for v in distill)):
            raise ValueError(f"its loss window is not valid: {saved!r}")
        self.loss, self.count = float(loss), count
        return [float(v) for v in distill]


STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
"""The signals that ask a run to save and stop (pretraining, and downstream training through
`resumable_training`). SIGHUP too: a closed terminal or a dropped ssh session used to kill a run
without its checkpoint."""


class StopFlag:
    """Turns SIGINT/SIGTERM/SIGHUP into a request to checkpoint and stop; a second signal aborts."""

    def __init__(self) -> None:
        self.requested: Optional[str] = None
        self._previous: Dict[int, Any] = {}

    def __enter__(self) -> "StopFlag":
        for sig in STOP_SIGNALS:
            try:
                self._previous[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread
                pass
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested is not None:
            raise KeyboardInterrupt
        self.requested = signal.Signals(signum).name

    def __exit__(self, *exc: Any) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


__all__ = ["Progress", "StopFlag", "Window"]
