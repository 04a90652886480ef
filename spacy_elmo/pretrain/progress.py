"""Where a pretraining run stands: its position (checkpointed) and the running averages it logs."""
import signal
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, Optional


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


class StopFlag:
    """Turns SIGINT/SIGTERM into a request to checkpoint and stop; a second signal aborts."""

    def __init__(self) -> None:
        self.requested: Optional[str] = None
        self._previous: Dict[int, Any] = {}

    def __enter__(self) -> "StopFlag":
        for sig in (signal.SIGINT, signal.SIGTERM):
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
