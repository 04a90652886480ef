"""How many CPU threads the `elmo` component predicts with: degrade gracefully on shared cores.

PyTorch's thread pool (OpenMP) runs each parallel region on all its threads
and waits for the slowest. When another process keeps a core busy, the
thread on that core gets a time slice now and then, and every one of the
LSTM's small per-step regions waits for it: on 2 cores with one other
CPU-bound process, 2 threads ran 40-70x slower than 1 (benchmarks/bench_load.py).
The wait policy (OMP_WAIT_POLICY=PASSIVE, GOMP_SPINCOUNT) is read once when
OpenMP starts, before any component exists, so at run time the one lever is
the number of threads. The component's `threads` setting:

* "auto" (the default): the cores other processes leave free, at most
  torch's own setting (`torch.get_num_threads()`). The CPU time of the whole
  machine (/proc/stat) minus this process's own is sampled between calls,
  over windows of at least `WINDOW_SECONDS`; a call uses
  floor(free cores + 0.25) threads (at least 1), so a core more than a
  quarter busy with other work is left alone. The first window runs on one
  thread. Where /proc/stat does not exist: torch's own setting.
* 0: torch's own setting, whatever the load.
* N >= 1: N threads.

The count applies only while the component predicts; torch's setting is
restored afterwards, so nothing else in the process is affected. Each call
changes it at most twice (a few microseconds).
"""
import os
import time
from contextlib import contextmanager
from typing import Iterator, Optional, Tuple, Union

import torch

ThreadsSetting = Union[int, str]

WINDOW_SECONDS = 0.5
# free cores needed per thread beyond the first: a core a quarter busy is left alone
BUSY_MARGIN = 0.25


def check_threads(setting: ThreadsSetting) -> ThreadsSetting:
    """The setting, or a ValueError saying what is allowed."""
    if setting == "auto" or (isinstance(setting, int) and not isinstance(setting, bool) and setting >= 0):
        return setting
    raise ValueError(f"threads must be \"auto\", 0 (torch's own setting) or a number of threads >= 1, got {setting!r}")


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


_MONITOR = FreeCores()


def threads_for_call(setting: ThreadsSetting, monitor: FreeCores = _MONITOR) -> int:
    """The number of threads a prediction should use now."""
    ceiling = torch.get_num_threads()
    if setting == 0:
        return ceiling
    if setting != "auto":
        return int(setting)
    if not monitor.available:
        return ceiling
    free = monitor.sample()
    if free is None:
        return 1
    return max(1, min(ceiling, int(free + BUSY_MARGIN)))


@contextmanager
def cpu_threads(setting: ThreadsSetting) -> Iterator[int]:
    """Run the block with the threads `setting` asks for now; torch's setting is restored after."""
    previous = torch.get_num_threads()
    wanted = threads_for_call(setting)
    if wanted == previous:
        yield wanted
        return
    torch.set_num_threads(wanted)
    try:
        yield wanted
    finally:
        torch.set_num_threads(previous)


__all__ = ["cpu_threads", "threads_for_call", "check_threads", "FreeCores", "ThreadsSetting"]
