"""Regression: the memory benchmark's child reported its parent's peak RSS.

ru_maxrss survives fork and exec on Linux, so a child started after a 3 GB
section reported 3 GB from its first sample on. The child now reads VmHWM.
"""
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_embed.py"


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_child_peak_is_its_own():
    source = BENCH.read_text()
    start = source.index("def peak_mib():")
    helper = source[start:source.index("def progress(", start)]
    ballast = bytearray(400 * 2**20)  # the parent peaks at > 400 MiB
    ballast[::4096] = b"x" * len(ballast[::4096])
    code = "import resource\n" + helper + "print(peak_mib())"
    child_peak = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert child_peak < 200, child_peak
    del ballast
