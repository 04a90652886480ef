"""Regression: a review of pretraining found settings checked but not used, and records that lied.

- The config check accepted "no" / "False" for a boolean and ".001" for a number, but the run read the
  raw strings: `--model.word_table_trainable no` trained the frozen table (bool("no") is True), and
  `--training.learning_rate .001` crashed in the schedule. The values as the schemas read them are now
  the run's; infinite or NaN numbers are refused.
- `max_epochs = 0` (spaCy's "no limit") trained nothing and marked the run finished: refused.
- A missing [paths] word_table or softmax_init, or a missing teacher, was reported only after the
  whole corpus was tokenized (minutes on the real text): now before it is read.
- After a resume, log.jsonl kept the killed session's rows after the checkpoint and dropped the
  resumed run's rows for those steps (a resume with a lowered learning rate logged the old one).
- model-best and snapshots recorded the training time of the last checkpoint (0.0 before the first).
- A finished run resumed with a larger max_steps and killed before its new end still counted as
  finished (`run_finished`), so the scripts would never resume it.
"""
import json

import pytest

from spacy_elmo.io import read_meta
from spacy_elmo.pretrain import SettingsError, load_config, pretrain
from spacy_elmo.pretrain import trainer as trainer_module
from spacy_elmo.pretrain.trainer import run_finished


def _settings(small_corpus, **more):
    settings = {"paths.train": str(small_corpus), "training.max_steps": 4, "training.eval_every": 2,
                "training.checkpoint_every": 2, "training.threads": 1, "softmax.kind": "sampled",
                "softmax.n_samples": 64}
    settings.update(more)
    return settings


def test_the_checked_values_are_the_runs(tiny_config_path):
    config = load_config(tiny_config_path, {"model.word_table_trainable": "no", "training.learning_rate": ".001",
                                            "training.distill.weight": ".5"})
    assert config["model"]["word_table_trainable"] is False
    assert config["training"]["learning_rate"] == 0.001 and config["training"]["distill"]["weight"] == 0.5
    for bad, named in (({"training.learning_rate": "Infinity"}, "learning_rate"),
                       ({"training.grad_clip": float("nan")}, "grad_clip"),
                       ({"training.max_epochs": 0}, "max_epochs")):
        with pytest.raises(SettingsError, match=named):
            load_config(tiny_config_path, bad)


@pytest.mark.parametrize("setting, value, message", [
    ("paths.word_table", "missing-table", "word_table"),
    ("paths.softmax_init", "missing-table", "softmax_init"),
    ("training.distill.teacher", "missing-teacher", "teacher"),
])
def test_missing_inputs_are_reported_before_the_corpus_is_read(
    tiny_config_path, small_corpus, tmp_path, setting, value, message
):
    config = load_config(tiny_config_path, _settings(small_corpus, **{setting: str(tmp_path / value)}))
    with pytest.raises(SettingsError, match=message):
        pretrain(config, tmp_path / "run", progress=False)
    assert not list((tmp_path / "run").rglob("segments*")), "the corpus was tokenized first"


def test_a_resume_logs_the_steps_after_its_checkpoint_anew(tiny_config_path, small_corpus, tmp_path):
    run = tmp_path / "run"
    pretrain(load_config(tiny_config_path, _settings(small_corpus)), run, progress=False)
    log = run / "log.jsonl"
    # what a session killed after its step-4 checkpoint left: a row of a step the resume trains again
    with log.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"step": 6, "lr": 123.0, "train_loss": 0.5}) + "\n")
    pretrain(load_config(tiny_config_path, _settings(small_corpus, **{"training.max_steps": 8})), run,
             resume=True, progress=False)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [row["step"] for row in rows if "step" in row] == [2, 4, 6, 8]
    assert all(row.get("lr") != 123.0 for row in rows)


class _Clock:
    """The trainer's `time`, its perf_counter a second further on at every reading."""

    def __init__(self) -> None:
        import time

        self.time, self.now = time, 0.0

    def perf_counter(self) -> float:
        self.now += 1.0
        return self.now

    def __getattr__(self, name):
        return getattr(self.time, name)


def test_saved_models_record_the_training_time_when_they_are_saved(
    tiny_config_path, small_corpus, tmp_path, monkeypatch
):
    monkeypatch.setattr(trainer_module, "time", _Clock())
    settings = _settings(small_corpus, **{"paths.dev": str(small_corpus), "corpus.dev_max_tokens": 300,
                                          "training.checkpoint_every": 1000, "training.snapshot_every": 2})
    pretrain(load_config(tiny_config_path, settings), tmp_path / "run", progress=False)
    seconds = [read_meta(tmp_path / "run" / "snapshots" / f"step-{step}")["metadata"]["training_seconds"]
               for step in (2, 4)]
    assert 0 < seconds[0] < seconds[1]
    assert read_meta(tmp_path / "run" / "model-best")["metadata"]["training_seconds"] > 0


def test_an_extended_resume_stopped_before_its_end_is_not_finished(tiny_config_path, small_corpus, tmp_path, inject):
    run = tmp_path / "run"
    pretrain(load_config(tiny_config_path, _settings(small_corpus)), run, progress=False)
    assert run_finished(run)
    inject("pretrain.step:1:enospc")  # the resumed session dies at its first step: no model-last written
    with pytest.raises(OSError):
        pretrain(load_config(tiny_config_path, _settings(small_corpus, **{"training.max_steps": 8})), run,
                 resume=True, progress=False)
    assert not run_finished(run)
