"""Regression: scripts/pretrain.py continued an unfinished pass with other settings.

A first pass stopped by a signal (exit 143) and started again with another `--train` text was
resumed on the new text, with a warning from `pretrain` only: the pass then trained on both texts
while its run_settings.json named the first, and the next call refused its own output as made with
other settings. As scripts/adapt.py now does, the script compares the settings before continuing a
pass and refuses a difference, naming it and --overwrite."""
import os
import subprocess
import sys
from pathlib import Path

from spacy_elmo.faults import VARIABLE

SCRIPTS = Path(__file__).parents[2] / "scripts"


def _command(config, train, dev, run):
    return [sys.executable, str(SCRIPTS / "pretrain.py"), "--elmo-model", "pretrained", "--config", str(config),
            "--train", str(train), "--dev", str(dev), "--output", str(run), "--word-table", "none",
            "--passes", "1", "--training.max_steps", "4", "--training.eval_every", "1000",
            "--training.checkpoint_every", "1000", "--training.threads", "1"]


def test_an_unfinished_pass_is_not_continued_on_other_text(tiny_config_path, small_corpus, tmp_path):
    other = tmp_path / "other.txt"
    other.write_text(small_corpus.read_text(encoding="utf-8").upper(), encoding="utf-8")
    run = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k != VARIABLE}
    env["OMP_NUM_THREADS"] = "1"
    stopped = subprocess.run(_command(tiny_config_path, small_corpus, small_corpus, run),
                             env={**env, VARIABLE: "pretrain.step:2:term"}, capture_output=True, text=True,
                             timeout=600)
    assert stopped.returncode == 143, stopped.stderr[-3000:]
    changed = subprocess.run(_command(tiny_config_path, other, small_corpus, run), env=env, capture_output=True,
                             text=True, timeout=600)
    assert changed.returncode == 1, changed.stdout[-2000:] + changed.stderr[-2000:]
    assert "holds an unfinished pretraining started with other settings" in changed.stderr
    assert "--overwrite" in changed.stderr and "Traceback" not in changed.stderr
    same = subprocess.run(_command(tiny_config_path, small_corpus, small_corpus, run), env=env, capture_output=True,
                          text=True, timeout=600)
    assert same.returncode == 0, same.stderr[-3000:]
