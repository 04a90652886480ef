"""Regression: the memory benchmark's child reported its parent's peak RSS.

ru_maxrss survives fork and exec on Linux, so a child started after a 3 GB
section reported 3 GB from its first sample on. The child now reads VmHWM,
its own address space's peak (`benchmarks/common.peak_mib`). Checked here on
the helper's logic with a stand-in /proc file (no kernel figures: those vary
by machine).
"""
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import common  # noqa: E402


def test_child_peak_is_its_own_vmhwm_not_the_inherited_maxrss(tmp_path, monkeypatch):
    status = tmp_path / "status"
    status.write_text("Name:\tpython\nVmPeak:\t 9999999 kB\nVmHWM:\t  102400 kB\nVmRSS:\t   51200 kB\n")
    monkeypatch.setattr(common.resource, "getrusage", lambda who: SimpleNamespace(ru_maxrss=3 * 1024 * 1024))
    assert common.peak_mib(str(status)) == 100.0  # not the parent's 3 GB


def test_falls_back_to_maxrss_without_proc(tmp_path, monkeypatch):
    monkeypatch.setattr(common.resource, "getrusage", lambda who: SimpleNamespace(ru_maxrss=2048))
    assert common.peak_mib(str(tmp_path / "missing")) == 2.0
