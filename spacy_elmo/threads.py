"""How many CPU threads the `elmo` component predicts with: torch's, unless told otherwise.

The component's `threads` setting:

* 0 (the default): torch's own setting (`torch.get_num_threads()`, which
  `torch.set_num_threads`, OMP_NUM_THREADS and spaCy's own thread handling
  decide), as every other PyTorch model in the process uses.
* N >= 1: N threads while the component predicts.
* "load-aware": the cores other processes leave free, at most torch's own
  setting. For a machine whose cores other CPU-bound processes share:
  PyTorch's thread pool (OpenMP) runs each parallel region on all its
  threads and waits for the slowest, so when another process keeps a core
  busy, every one of the LSTM's small per-step regions waits for the thread
  on that core (benchmarks/bench_load.py measures it). The CPU time of the
  whole machine (/proc/stat) minus this process's own is sampled between
  calls, over windows of at least `WINDOW_SECONDS`; a call uses
  floor(free cores + 0.25) threads (at least 1), so a core more than a
  quarter busy with other work is left alone. The first window runs on one
  thread; where /proc/stat does not exist, torch's own setting. /proc/stat
  counts the whole machine: inside a container it is the host's load, so
  this mode is for machines (or VMs) whose load is the process's to see.
* "auto": a deprecated spelling of "load-aware", accepted so that configs
  that carry it keep loading. It behaves as "load-aware" and warns once.

The wait policy (OMP_WAIT_POLICY=PASSIVE, GOMP_SPINCOUNT) is read once when
OpenMP starts, before any component exists, so at run time the one lever is
the number of threads. A count applies only while the component predicts;
torch's setting is restored afterwards, so nothing else in the process is
affected.
"""
import os
import sys
import threading
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Set, Tuple, Union

import torch

ThreadsSetting = Union[int, str]

TORCH = 0  # the setting that means torch's own thread count
LOAD_AWARE = "load-aware"
DEPRECATED_ALIASES = {"auto": LOAD_AWARE}
WINDOW_SECONDS = 0.5
# free cores needed per thread beyond the first: a core a quarter busy is left alone
BUSY_MARGIN = 0.25


def check_threads(setting: ThreadsSetting) -> ThreadsSetting:
    """The setting in its current spelling ("auto" becomes "load-aware", with a warning), or a
    ValueError saying what is allowed."""
    if isinstance(setting, str) and setting in DEPRECATED_ALIASES:
        _warn_deprecated(setting)
        return DEPRECATED_ALIASES[setting]
    if setting == LOAD_AWARE or (isinstance(setting, int) and not isinstance(setting, bool) and setting >= 0):
        return setting
    raise ValueError(
        f"threads must be 0 (torch's own setting), a number of threads >= 1 or \"{LOAD_AWARE}\", got {setting!r}"
    )


_WARNED: Set[str] = set()


def _warn_deprecated(setting: str) -> None:
    if setting in _WARNED:
        return
    _WARNED.add(setting)
    warnings.warn(
        f"elmo: threads = \"{setting}\" is deprecated: it means \"{LOAD_AWARE}\" (threads from the load that "
        "/proc/stat shows, which inside a container is the host's). Set threads = \"load-aware\" to keep it, "
        "or threads = 0 (the default) for torch's own setting.",
        FutureWarning,
        stacklevel=3,
    )


def _machine_busy_seconds() -> Optional[float]:
    """CPU seconds all cores of the machine spent busy since boot (None without /proc/stat)."""
    try:
        with open("/proc/stat", "rb") as handle:
            fields = handle.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != b"cpu":
        return None
    # user nice system idle iowait irq softirq steal (guest time is inside user)
    values = [int(v) for v in fields[1:9]]
    busy = sum(values) - values[3] - values[4]
    return busy / _CLOCK_TICKS


_CLOCK_TICKS = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
_wall_clock = time.monotonic
_own_cpu_clock = time.process_time  # every thread of this process


def _machine_cores() -> int:
    return os.cpu_count() or 1


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class FreeCores:
    """The cores other processes leave free, from CPU time sampled between calls."""

    def __init__(self) -> None:
        self._last: Optional[Tuple[float, float, float]] = None  # (wall, machine busy, own CPU)
        self.free: Optional[float] = None  # the latest estimate
        self.available = _machine_busy_seconds() is not None

    def sample(self) -> Optional[float]:
        """Update and return the estimate (None until one window has passed)."""
        busy = _machine_busy_seconds()
        if busy is None:
            return None
        now = (_wall_clock(), busy, _own_cpu_clock())
        if self._last is None:
            self._last = now
        elif now[0] - self._last[0] >= WINDOW_SECONDS:
            wall, machine, own = (a - b for a, b in zip(now, self._last))
            others = max(0.0, machine - own) / wall
            self.free = max(0.0, min(float(_usable_cores()), _machine_cores() - others))
            self._last = now
        return self.free


_MONITOR: Optional[FreeCores] = None  # created on the first load-aware call


def _monitor() -> FreeCores:
    global _MONITOR
    if _MONITOR is None:
        _MONITOR = FreeCores()
    return _MONITOR


def threads_for_call(setting: ThreadsSetting, monitor: Optional[FreeCores] = None,
                     ceiling: Optional[int] = None) -> int:
    """The number of threads a prediction should use now.

    monitor: where "load-aware" reads the free cores (default: one per process).
    ceiling: torch's own setting (default: `torch.get_num_threads()` in this thread).
    """
    if isinstance(setting, str):
        setting = DEPRECATED_ALIASES.get(setting, setting)  # a cfg with the deprecated spelling
    ceiling = ceiling if ceiling is not None else torch.get_num_threads()
    if setting == TORCH:
        return ceiling
    if setting != LOAD_AWARE:
        return int(setting)
    monitor = monitor if monitor is not None else _monitor()
    if not monitor.available:
        return ceiling
    free = monitor.sample()
    if free is None:
        return 1
    return max(1, min(ceiling, int(free + BUSY_MARGIN)))


# torch's own setting while calls run: read by the first call to enter, put back by each one leaving
_CALLS_LOCK = threading.Lock()
_active_calls = 0
_torch_setting: Optional[int] = None


def _no_calls_after_fork() -> None:
    """In a forked child (spaCy's `n_process`): the parent's calls under way do not run there, so none
    counts (a count inherited from them kept the parent's setting in a worker told to use one thread);
    and the child looks again whether it is one of spaCy's workers (its parent was not)."""
    global _CALLS_LOCK, _active_calls, _torch_setting
    _CALLS_LOCK, _active_calls, _torch_setting = threading.Lock(), 0, None
    _worker.update(checked=False, pending=False, in_worker=False, forked=True)


# -- spaCy's nlp.pipe(n_process=N) workers ------------------------------------------------------------------

_worker = {"checked": False, "pending": False, "in_worker": False, "forked": False, "capped_warned": False}


def in_spacy_pipe_worker() -> bool:
    """Whether this call runs in a worker process of spaCy's nlp.pipe(n_process=N): under its worker
    function (`spacy.language._apply_pipes`) on the stack. Other child processes (a web server's or
    a task queue's workers, a user's multiprocessing pool) are not, and keep their thread settings."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "_apply_pipes" and Path(code.co_filename).parts[-2:] == ("spacy", "language.py"):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


def spacy_worker_threads(setting: ThreadsSetting = TORCH) -> ThreadsSetting:
    """The threads setting a biLM call should use, after settling torch's in a spaCy worker process.

    Called before every biLM prediction (the component's, and a standalone model's that runs the biLM
    itself). In a worker of nlp.pipe(n_process=N), forked or spawned, torch is set to one thread, once
    per process: the workers share the machine's cores, and in a forked worker OpenMP's thread pool,
    inherited from the parent but not its threads, hangs the first parallel region for good. Only
    spaCy's workers (`in_spacy_pipe_worker`): the process's own setting stays anywhere else, and a later
    setting in a spawned worker stays too. In a forked worker a `setting` of more than one thread is
    one thread (with a warning, once): that is the hang again.
    """
    if not _worker["checked"]:
        _worker["checked"] = True
        _worker["pending"] = in_spacy_pipe_worker()
        _worker["in_worker"] = _worker["pending"]
    if _worker["pending"]:
        torch.set_num_threads(1)
        _worker["pending"] = False
    if _worker["in_worker"] and _worker["forked"] and isinstance(setting, int) and setting > 1:
        if not _worker["capped_warned"]:
            _worker["capped_warned"] = True
            warnings.warn(
                f"elmo: threads = {setting} in a forked worker of nlp.pipe(n_process > 1) runs on one thread: "
                "OpenMP's thread pool does not survive fork, and more threads there wait for ever. Spawned "
                "workers (multiprocessing.set_start_method('spawn')) can use more.",
                UserWarning,
                stacklevel=2,
            )
        return 1
    return setting


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_no_calls_after_fork)


@contextmanager
def cpu_threads(setting: ThreadsSetting) -> Iterator[int]:
    """Run the block with the threads `setting` asks for now; torch's setting is restored after.

    Several Python threads may predict at once (a web server's pool). `torch.set_num_threads` sets
    the calling thread's OpenMP count and a process-wide value that each new thread starts from, so
    a thread started while another was inside a call began with that call's count, took it for
    torch's setting and "restored" it when its own call ended: the count stayed with the thread.
    torch's setting is therefore the one read by the first call to enter while none runs, and every
    call puts its thread back to it when leaving. (A thread started during a call that never predicts
    still starts with that call's count; torch gives no way to set one without the other.)
    """
    global _active_calls, _torch_setting
    with _CALLS_LOCK:
        if _active_calls == 0:
            _torch_setting = torch.get_num_threads()
        _active_calls += 1
        torch_setting = int(_torch_setting)  # type: ignore[arg-type]
    try:
        wanted = threads_for_call(setting, ceiling=torch_setting)
        if torch.get_num_threads() != wanted:
            torch.set_num_threads(wanted)
        yield wanted
    finally:
        with _CALLS_LOCK:
            _active_calls -= 1
        if torch.get_num_threads() != torch_setting:
            torch.set_num_threads(torch_setting)


__all__ = ["cpu_threads", "threads_for_call", "check_threads", "FreeCores", "ThreadsSetting", "TORCH", "LOAD_AWARE",
           "in_spacy_pipe_worker", "spacy_worker_threads"]
