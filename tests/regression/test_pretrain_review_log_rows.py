"""Regression: log.jsonl got duplicate rows, and a resumed run's rows differed.

(a) The loss window (the training losses since the last row) was not checkpointed: a run
killed between an evaluation and the next checkpoint logged the replayed evaluation again
on resume, with another train_loss, and any resumed run's next row averaged only the steps
of its own session. (b) Without a dev set, `_finish` logged a second row at the final step
of an uninterrupted run. (c) Resuming a finished run appended another row.

The checkpoint now keeps the loss window (and the last evaluation), a row is appended only
for a step after the last logged one, and `_finish` logs only when the window holds steps:
an uninterrupted run and a killed or stopped and resumed one write the same log."""
import json
import os
import signal
import subprocess
import sys

import pytest

from spacy_elmo.faults import VARIABLE
from spacy_elmo.pretrain import Interrupted, load_config, pretrain

TIMING = {"elapsed_s", "tokens_per_s"}  # the only values that depend on the clock


def _settings(small_corpus, dev: bool):
    settings = {"paths.train": str(small_corpus), "training.max_steps": 7, "training.eval_every": 2,
                "training.checkpoint_every": 3, "training.threads": 1, "softmax.kind": "sampled",
                "softmax.n_samples": 64}
    if dev:
        settings.update({"paths.dev": str(small_corpus), "corpus.dev_max_tokens": 300})
    return settings


def _rows(run):
    rows = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    return [{k: v for k, v in row.items() if k not in TIMING} for row in rows]


def test_a_killed_and_resumed_run_logs_what_an_uninterrupted_one_does(tiny_config_path, small_corpus, tmp_path):
    settings = _settings(small_corpus, dev=True)
    config = load_config(tiny_config_path, settings)
    pretrain(config, tmp_path / "ref", progress=False)
    reference = _rows(tmp_path / "ref")
    assert [r["step"] for r in reference] == [2, 4, 6, 7]

    # killed at step 5: step 4's row is logged, the checkpoint is step 3's
    run = tmp_path / "run"
    overrides = [arg for key, value in settings.items() for arg in (f"--{key}", str(value))]
    command = [sys.executable, "-m", "spacy_elmo", "pretrain", str(tiny_config_path), str(run), "--quiet", *overrides]
    env = {**os.environ, "OMP_NUM_THREADS": "1", VARIABLE: "pretrain.step:5:kill"}
    killed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert [r["step"] for r in _rows(run)] == [2, 4]
    pretrain(config, run, resume=True, progress=False)  # replays step 4 and its evaluation
    assert _rows(run) == reference


def test_a_stopped_and_resumed_run_logs_what_an_uninterrupted_one_does(
    tiny_config_path, small_corpus, tmp_path, inject, monkeypatch
):
    config = load_config(tiny_config_path, _settings(small_corpus, dev=True))
    pretrain(config, tmp_path / "ref", progress=False)
    inject("pretrain.step:5:int")  # stopped at step 5: its loss waits in the window for step 6's row
    with pytest.raises(Interrupted):
        pretrain(config, tmp_path / "run", progress=False)
    monkeypatch.delenv(VARIABLE)
    pretrain(config, tmp_path / "run", resume=True, progress=False)
    assert _rows(tmp_path / "run") == _rows(tmp_path / "ref")


def test_without_dev_one_row_per_step_and_none_on_resuming_a_finished_run(tiny_config_path, small_corpus, tmp_path):
    config = load_config(tiny_config_path, {**_settings(small_corpus, dev=False), "training.max_steps": 6})
    pretrain(config, tmp_path / "run", progress=False)
    rows = _rows(tmp_path / "run")
    assert [r["step"] for r in rows] == [2, 4, 6]  # not a second row at step 6
    pretrain(config, tmp_path / "run", resume=True, progress=False)
    assert _rows(tmp_path / "run") == rows
    # with a dev set and a last step off the evaluation grid: a resumed finished run adds nothing either
    config = load_config(tiny_config_path, _settings(small_corpus, dev=True))
    pretrain(config, tmp_path / "dev", progress=False)
    rows = _rows(tmp_path / "dev")
    pretrain(config, tmp_path / "dev", resume=True, progress=False)
    assert _rows(tmp_path / "dev") == rows and [r["step"] for r in rows] == [2, 4, 6, 7]
