"""Regression: the memory benchmark's child reported its parent's peak RSS.

ru_maxrss survives fork and exec on Linux, so a child started after a 3 GB
section reported 3 GB from its first sample on. The child now reads VmHWM,
its own address space's peak. Checked here on the helper's logic with a
stand-in /proc file (no kernel figures: those vary by machine).
"""
import io
from pathlib import Path
from types import SimpleNamespace

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_embed.py"


def _peak_mib(status_text, maxrss_kib):
    source = BENCH.read_text()
    start = source.index("def peak_mib():")
    helper = source[start:source.index("def progress(", start)]

    def fake_open(path, *args, **kwargs):
        assert path == "/proc/self/status"
        if status_text is None:
            raise OSError("no /proc here")
        return io.StringIO(status_text)

    usage = SimpleNamespace(ru_maxrss=maxrss_kib)
    fake_resource = SimpleNamespace(getrusage=lambda who: usage, RUSAGE_SELF=0)
    namespace = {"open": fake_open, "resource": fake_resource}
    exec(helper, namespace)
    return namespace["peak_mib"]()


def test_child_peak_is_its_own_vmhwm_not_the_inherited_maxrss():
    status = "Name:\tpython\nVmPeak:\t 9999999 kB\nVmHWM:\t  102400 kB\nVmRSS:\t   51200 kB\n"
    assert _peak_mib(status, maxrss_kib=3 * 1024 * 1024) == 100.0  # not the parent's 3 GB


def test_falls_back_to_maxrss_without_proc():
    assert _peak_mib(None, maxrss_kib=2048) == 2.0
