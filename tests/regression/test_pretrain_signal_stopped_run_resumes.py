"""Regression: scripts/adapt.py and scripts/pretrain.py took a run stopped by a signal for a
finished one.

They took "OUTPUT/model-last exists" to mean the run had finished, but the trainer writes
model-last when SIGINT/SIGTERM stops it too, so an interrupted adaptation or first pass was
reported finished and never continued. model-last's metadata now says whether the run
reached its end (`finished`), and the scripts resume until it does (`run_finished`)."""
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spacy_elmo.faults import VARIABLE
from spacy_elmo.io import load_model
from spacy_elmo.pretrain import run_finished

SCRIPTS = Path(__file__).parents[2] / "scripts"


def _without_finished(model_dir: Path) -> None:
    """model_dir's elmo.json as a model-last written before the field existed."""
    meta_path = model_dir / "elmo.json"
    meta = json.loads(meta_path.read_text())
    del meta["metadata"]["finished"]
    meta_path.write_text(json.dumps(meta))


def test_scripts_resume_a_run_that_a_signal_stopped(tiny_config_path, small_corpus, tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    command = [sys.executable, str(SCRIPTS / "pretrain.py"), "--elmo-model", "pretrained",
               "--config", str(tiny_config_path), "--train", str(small_corpus), "--dev", str(small_corpus),
               "--output", str(run), "--word-table", "none", "--passes", "1", "--training.max_steps", "4",
               "--training.eval_every", "1000", "--training.checkpoint_every", "1000", "--training.threads", "1"]
    env = {k: v for k, v in os.environ.items() if k != VARIABLE}
    env["OMP_NUM_THREADS"] = "1"
    stopped = subprocess.run(command, env={**env, VARIABLE: "pretrain.step:2:term"}, capture_output=True, text=True,
                             timeout=600)
    assert stopped.returncode == 143, stopped.stderr[-3000:]  # SIGTERM: 128 + 15
    assert (run / "model-last" / "elmo.json").is_file()  # written on the signal...
    assert load_model(run / "model-last").metadata["finished"] is False
    assert not run_finished(run)  # ...but the run has not finished

    # scripts/adapt.py: the same run is continued, not kept as finished
    monkeypatch.syspath_prepend(str(SCRIPTS))
    adapt = importlib.import_module("adapt")
    calls = []
    monkeypatch.setattr(adapt, "run_pretrain", lambda config, output, settings: calls.append(output))
    monkeypatch.setattr(sys, "argv", ["adapt.py", "--train", str(small_corpus), "--dev", str(small_corpus),
                                      "--output", str(run)])
    # pretrain.py's record names other settings, so adapt.py would refuse to continue the run
    # (tests/regression/test_project_review_adapt_resume_settings.py); without a record (a run
    # from before them) it continues it
    record = run / "run_settings.json"
    kept = record.read_bytes()
    record.unlink()
    adapt.main()
    record.write_bytes(kept)
    assert calls == [run] and "has finished" not in capsys.readouterr().out

    resumed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "has finished" not in resumed.stdout
    meta = load_model(run / "model-last").metadata
    assert meta["finished"] is True and meta["step"] == 4
    assert run_finished(run)
    calls.clear()
    # finished, so not continued; and made by pretrain.py with other settings than these, so refused
    # (naming the difference) rather than kept as if it were this adaptation
    with pytest.raises(SystemExit) as refused:
        adapt.main()
    assert calls == [] and "holds a finished adaptation made with other settings" in str(refused.value.code)

    # a model-last from before the field: finished when it reached max_steps
    _without_finished(run / "model-last")
    assert run_finished(run)


def test_a_model_last_without_the_field_is_judged_by_its_step(tiny_config_path, small_corpus, tmp_path, inject):
    from spacy_elmo.pretrain import Interrupted, load_config, pretrain

    config = load_config(tiny_config_path, {"paths.train": str(small_corpus), "training.max_steps": 4,
                                            "training.eval_every": 1000, "training.threads": 1})
    inject("pretrain.step:2:int")
    with pytest.raises(Interrupted):
        pretrain(config, tmp_path / "run", progress=False)
    _without_finished(tmp_path / "run" / "model-last")
    assert load_model(tmp_path / "run" / "model-last").metadata["step"] == 2
    assert not run_finished(tmp_path / "run")
    assert not run_finished(tmp_path / "nothing here")
