"""The spacy project `smoke` workflow: every step of `all` on tiny slices, end to end."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow  # minutes: python -m pytest -m slow tests/test_project.py
def test_smoke_workflow(data_dir, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    for name in ("project.yml", "configs", "scripts"):
        source = ROOT / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, project / name)
    variables = [f"--vars.ewt_dir={data_dir / 'ud_en_ewt'}", f"--vars.uner_dir={data_dir / 'uner_en_ewt'}"]
    out = subprocess.run([sys.executable, "-m", "spacy", "project", "run", "smoke", str(project), *variables],
                         capture_output=True, text=True, timeout=1500)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    comparison = (project / "metrics" / "smoke-comparison.md").read_text()
    for metric in ("UPOS", "XPOS", "UAS", "LAS", "NER F1"):
        assert f"| {metric} |" in comparison
    elmo = json.loads((project / "metrics" / "smoke-ewt_elmo.json").read_text())
    assert set(elmo["mixes"]) == {"tagger", "morphologizer", "parser"}
    for name in ("smoke-dev_curves.png", "smoke-layer_weights.png"):
        assert (project / "plots" / name).stat().st_size > 5000
    # a time budget interrupts training cleanly: model-best kept, exit 0, recorded
    budgeted = subprocess.run(
        [sys.executable, "scripts/train.py", "configs/ner_baseline.cfg", "training/budget",
         "--train", "corpus/smoke-ner-train.spacy", "--dev", "corpus/smoke-ner-dev.spacy",
         "--max-minutes", "0.25", "--training.eval_frequency", "5"],
        cwd=project, capture_output=True, text=True, timeout=600)
    assert budgeted.returncode == 0, budgeted.stdout[-4000:] + budgeted.stderr[-4000:]
    wall = json.loads((project / "training" / "budget" / "wall_time.json").read_text())
    assert wall["stopped"] == "time budget"  # what stopped it, not how long it took (machines differ)
    assert (project / "training" / "budget" / "model-best").is_dir()
