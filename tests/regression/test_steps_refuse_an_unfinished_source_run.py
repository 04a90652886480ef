"""Regression: a step run by hand went ahead on the model-best of a run that had not finished.

model-best exists from a run's first evaluation on, so scripts/finetune.py on a stopped frozen run,
scripts/train.py or adapt.py on a stopped pretraining (`--pretrained-dir`), and static_vectors.py
on one, started from a half-trained model without a word. They now refuse it in one line, naming
the run, why it is unfinished and how to finish it; `--allow-unfinished` starts from it anyway, and
a model outside a run's folder is not asked about. The pretraining is real (the tiny config,
stopped by an injected SIGTERM); the fine-tuning run is the SIGTERM-stopped one of
test_finetune_script_log_status_and_settings.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spacy_elmo.faults import VARIABLE
from spacy_elmo.source_runs import unfinished_run
from tests.regression.test_finetune_script_log_status_and_settings import _finetune, frozen  # noqa: F401
from tests.regression.test_train_script_exit_status_and_settings import _script

ROOT = Path(__file__).parents[2]


def _pretrain(config: Path, corpus: Path, run: Path, *extra: str, fault: str = "") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != VARIABLE}
    env["OMP_NUM_THREADS"] = "1"
    if fault:
        env[VARIABLE] = fault
    command = [sys.executable, "-m", "spacy_elmo", "pretrain", str(config), str(run), "--paths.train", str(corpus),
               "--paths.dev", str(corpus), "--training.max_steps", "4", "--training.eval_every", "1",
               "--training.checkpoint_every", "1000", "--training.threads", "1", *extra]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture
def stopped_pretraining(tiny_config_path, small_corpus, tmp_path) -> Path:
    run = tmp_path / "pretrain"
    stopped = _pretrain(tiny_config_path, small_corpus, run, fault="pretrain.step:2:term")
    assert stopped.returncode == 143, stopped.stderr[-3000:]
    assert (run / "model-best" / "elmo.json").is_file()  # evaluated before the signal: a model-best
    return run


def test_scripts_refuse_a_stopped_pretraining_until_it_has_finished(
        stopped_pretraining, tiny_config_path, small_corpus, tmp_path, monkeypatch, capsys):
    run, best = stopped_pretraining, stopped_pretraining / "model-best"
    assert "has not reached its end" in unfinished_run(best)

    # scripts/train.py: refused before anything is read or written
    output = tmp_path / "tagger"
    for name in ("t.spacy", "d.spacy"):
        (tmp_path / name).write_bytes(b"")
    monkeypatch.setattr(sys, "argv", ["train.py", str(ROOT / "configs" / "ewt_elmo.cfg"), str(output),
                                      "--train", str(tmp_path / "t.spacy"), "--dev", str(tmp_path / "d.spacy"),
                                      "--elmo-model", "pretrained",
                                      "--pretrained-dir", str(best)])
    with pytest.raises(SystemExit) as refused:
        _script("train").main()
    message = str(refused.value.code)
    assert message.startswith(f"--pretrained-dir {best}: the pretraining in {run} has not reached its end")
    assert "--allow-unfinished" in message and "\n" not in message and not output.exists()

    # scripts/adapt.py: refused (a usage error, exit 2); with --allow-unfinished it adapts that model
    monkeypatch.syspath_prepend(str(ROOT / "scripts"))
    adapt = _script("adapt")
    calls = []
    monkeypatch.setattr(adapt, "run_pretrain", lambda config, output, settings: calls.append(settings))
    argv = ["adapt.py", "--train", str(small_corpus), "--dev", str(small_corpus), "--output", str(tmp_path / "adapted"),
            "--elmo-model", "pretrained", "--pretrained-dir", str(best)]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as refused:
        adapt.main()
    assert refused.value.code == 2 and "has not reached its end" in capsys.readouterr().err and calls == []
    monkeypatch.setattr(sys, "argv", argv + ["--allow-unfinished"])
    adapt.main()
    assert len(calls) == 1 and str(best) in calls[0]

    # scripts/static_vectors.py (the stopped model has no word table: the refusal comes first)
    with pytest.raises(SystemExit) as refused:
        _script("static_vectors").main([str(tmp_path / "vectors"), "--elmo-model", "pretrained",
                                        "--pretrained-dir", str(best)])
    assert refused.value.code == 1 and "has not reached its end" in " ".join(capsys.readouterr().out.split())
    with pytest.raises(SystemExit):
        _script("static_vectors").main([str(tmp_path / "vectors"), "--weights", str(best), "--allow-unfinished"])
    assert "has no word table" in " ".join(capsys.readouterr().out.split())

    # a run that has no model-last yet (killed after its first evaluation) is unfinished too
    (run / "model-last").rename(run / "kept")
    assert "has no final model-last: it is still running, or was killed" in unfinished_run(best)
    (run / "kept").rename(run / "model-last")

    resumed = _pretrain(tiny_config_path, small_corpus, run, "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert unfinished_run(best) is None and unfinished_run(run / "model-last") is None


def test_finetune_refuses_a_stopped_frozen_run(monkeypatch, capsys, frozen):  # noqa: F811
    first = frozen / "first"  # a fine-tuning run stopped by SIGTERM at step 2, its model-best the source
    assert _finetune(monkeypatch, frozen / "frozen", first, frozen) == 143
    assert (first / "model-best" / "config.cfg").is_file()
    capsys.readouterr()
    second = frozen / "second"
    assert _finetune(monkeypatch, first / "model-best", second, frozen) == 1
    err = capsys.readouterr().err.strip()
    source = first / "model-best"
    assert err.startswith(f"PIPELINE {source}: the training in {first} was interrupted by SIGTERM at step 2")
    assert "--resume" in err and "--allow-unfinished" in err and len(err.splitlines()) == 1
    assert not (second / "model-last").exists()


def _training_run(tmp_path: Path, state) -> Path:
    """A pipeline training run's folder as scripts/train.py leaves it, with `state` as model-last's."""
    run = tmp_path / "run"
    for name in ("model-best", "model-last"):
        (run / name).mkdir(parents=True, exist_ok=True)
        (run / name / "config.cfg").write_text("[nlp]\n")
    (run / "run_settings.json").write_text("{}")
    if state is not None:
        (run / "model-last" / "training_state.json").write_text(json.dumps(state))
    return run


@pytest.mark.parametrize("stopped,why", [
    (None, "is still running, or was killed (its last checkpoint is at step 7)"),
    ("time budget", "was stopped by its --max-minutes budget at step 7"),
    ("interrupted", "was interrupted at step 7"),
    ("early stopping", None), ("max steps", None), ("max epochs", None),
])
def test_a_training_run_is_final_only_once_it_has_finished(tmp_path, stopped, why):
    run = _training_run(tmp_path, {"stopped": stopped, "signal": None, "step": 7})
    reason = unfinished_run(run / "model-best")
    assert reason == (None if why is None else f"the training in {run} {why}")


def test_models_outside_a_run_are_not_asked_about(tmp_path, allennlp_dir):
    assert unfinished_run(allennlp_dir) is None  # a model of its own
    assert unfinished_run(tmp_path / "model-best") is None  # nothing there
    run = _training_run(tmp_path, None)
    assert "has no training state in model-last" in unfinished_run(run / "model-best")
    (run / "run_settings.json").unlink()  # a `spacy train` output: its model-last has no training state
    assert unfinished_run(run / "model-best") is None
