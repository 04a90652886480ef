"""scripts/pretrain.py took an interrupted run for a finished one.

It skipped any OUTPUT with a model-best, which a run writes at its first
evaluation, so a run stopped after that was never resumed. A run has finished
when it has a model-last; until then the script resumes it from its checkpoint.
"""
import shutil
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "scripts" / "pretrain.py"


def test_a_run_with_model_best_but_no_model_last_is_resumed(tiny_config_path, small_corpus, tmp_path):
    run = tmp_path / "run"
    command = [sys.executable, str(SCRIPT), "--elmo-model", "pretrained", "--config", str(tiny_config_path),
               "--train", str(small_corpus), "--dev", str(small_corpus), "--output", str(run),
               "--word-table", "none", "--passes", "1", "--training.max_steps", "2", "--training.eval_every", "1",
               "--training.checkpoint_every", "1", "--training.threads", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    # what an interruption after the first evaluation leaves: a checkpoint and model-best, no model-last
    shutil.rmtree(run / "model-last")
    assert (run / "model-best").is_dir() and (run / "checkpoint.pt").is_file()
    again = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "has finished" not in again.stdout
    assert (run / "model-last" / "elmo.json").is_file()
