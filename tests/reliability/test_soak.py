"""The soak run (slow): 1M tokens through nlp.pipe, memory flat, a probe doc unchanged.

    python -m pytest -m slow tests/reliability/test_soak.py
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

SOAK = Path(__file__).resolve().parents[2] / "benchmarks" / "soak.py"


def _growth_after_warmup():
    sys.path.insert(0, str(SOAK.parent))
    try:
        from soak import growth_after_warmup
    finally:
        sys.path.remove(str(SOAK.parent))
    return growth_after_warmup


def test_growth_statistic_ignores_batch_noise_and_sees_a_leak():
    """Peaks of the first and last quarter after warm-up: a sawtooth of +-60 MiB
    around a flat level reads as flat, 0.5 MiB per sample reads as growth."""
    growth = _growth_after_warmup()
    flat = [(i * 1000, 600 + (60 if i % 3 == 0 else -60 if i % 3 == 1 else 0), i) for i in range(40)]
    leak = [(t, rss + 0.5 * i, s) for i, (t, rss, s) in enumerate(flat)]
    assert growth(flat, warmup_tokens=8000) == 0.0
    assert growth(leak, warmup_tokens=8000) > 10.0
    warm_up_only = [(t, 300 + 10 * i if i < 8 else rss, s) for i, (t, rss, s) in enumerate(flat)]
    assert growth(warm_up_only, warmup_tokens=8000) == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("n_process", [1, 2])
def test_soak_million_tokens(n_process, ewt_dir, tmp_path):
    out = subprocess.run([sys.executable, str(SOAK), "--n-process", str(n_process), "--json", str(tmp_path / "r.json")],
                         capture_output=True, text=True, timeout=7200)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    result = json.loads((tmp_path / "r.json").read_text())[0]
    assert result["tokens"] >= 1_000_000
    assert result["probe_max_abs_diff"] == 0.0  # identical, bit for bit
    assert result["growth_after_warmup_mb"] <= 50.0


def test_soak_script_runs_small(ewt_dir, allennlp_dir, tmp_path):
    """The same script on 20k tokens, in the fast suite, so it cannot rot."""
    out = subprocess.run([sys.executable, str(SOAK), "--tokens", "20000", "--n-process", "1", "--every", "20",
                          "--weights", str(allennlp_dir), "--max-growth-mb", "1000", "--tolerance", "1e-5",
                          "--json", str(tmp_path / "r.json")],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    result = json.loads((tmp_path / "r.json").read_text())[0]
    assert result["tokens"] >= 20_000 and result["probe_max_abs_diff"] <= 1e-5 and len(result["samples"]) >= 3
