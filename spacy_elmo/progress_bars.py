"""Progress bars that suit both a terminal and a log file.

tqdm redraws its bar up to ten times a second. In a terminal that is what
one wants; redirected to a file (`nohup ... > run.log`, a CI log, a job
scheduler's output) every redraw is kept: a pretraining run's log fills
with thousands of carriage-return frames before its first useful line.
`progress_bar` is tqdm with one default changed: where its stream is not a
terminal (nor a notebook's), it redraws at most every `LOG_INTERVAL_S`
seconds. The bar's content and its final line are the same either way.
tqdm's own environment setting `TQDM_MININTERVAL`, or an explicit
`mininterval`, overrides it.
"""
import os
import sys
from typing import IO, TYPE_CHECKING, Any, Iterable, Optional

if TYPE_CHECKING:
    from tqdm import tqdm

LOG_INTERVAL_S = 30.0
"""Seconds between redraws of a bar whose stream is not a terminal."""


def is_interactive(stream: Optional[IO[str]]) -> bool:
    """Whether `stream` draws a bar in place: a terminal, or a Jupyter notebook's output stream.
    Not a file, a pipe, a closed stream or one without `isatty`."""
    if type(stream).__module__.startswith("ipykernel"):  # a notebook's stderr (its OutStream) draws bars
        return True
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def progress_bar(iterable: Optional[Iterable[Any]] = None, **kwargs: Any) -> "tqdm":
    """`tqdm(iterable, **kwargs)`, redrawn every `LOG_INTERVAL_S` seconds where its stream
    (`file`, default stderr) is not interactive and neither `mininterval` nor the environment's
    TQDM_MININTERVAL says otherwise."""
    from tqdm import tqdm  # lazy: importing the package (and its download code) needs no tqdm

    stream = kwargs.get("file") or sys.stderr
    if "mininterval" not in kwargs and "TQDM_MININTERVAL" not in os.environ and not is_interactive(stream):
        kwargs["mininterval"] = LOG_INTERVAL_S
    if stream is None:  # no stderr at all (the process started with it closed): nothing to draw on
        kwargs["disable"] = True
    else:
        kwargs["file"] = QuietOnFailure(stream)
    return tqdm(iterable, **kwargs)


class QuietOnFailure:
    """A bar's stream that goes quiet where writing fails: a pipe whose reader has gone (`... 2>&1 |
    tee log` after the ssh session dropped: EPIPE), a closed descriptor (EBADF), a closed file. The
    bar is only a view of the work: a run it reports on goes on without it (before, the first redraw
    after the reader left stopped a pretraining hours in). Everything else is the stream's own."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.failed = False

    def write(self, text: str) -> int:
        if not self.failed:
            try:
                return self.stream.write(text)
            except (OSError, ValueError):  # ValueError: "I/O operation on closed file"
                self.failed = True
        return len(text)

    def flush(self) -> None:
        if not self.failed:
            try:
                self.stream.flush()
            except (OSError, ValueError):
                self.failed = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)
