"""Regression: a run stopped between two evaluations lost the losses it had summed since the last one.

The log row of an evaluation sums the losses of every step since the one before. A run stopped
at a step that is not an evaluation step kept those sums in memory only, so after --resume the
first row (and model-last's meta.json) showed a smaller loss than the uninterrupted run's, though
the scores and weights were the same. The sums (and the words trained on) are now part of
training_state.json and a resumed run goes on from them: its log.jsonl is the uninterrupted run's.
The stop comes from a registered before_update callback at a fixed step (no signals, no clock).
"""
import json
import threading

import spacy
from spacy.training.initialize import init_nlp
from spacy.util import registry

from spacy_elmo.resumable_training import LOG, MODEL_LAST, read_state, train_resumable
from tests.regression.test_train_script_exit_status_and_settings import project  # noqa: F401

STOP = threading.Event()


@registry.callbacks("test-resume-review-stop-at.v1")
def _stop_at(step: int):
    """A before_update callback that asks the loop to stop after step `step` (it finishes the step first)."""
    def before_update(nlp, info):
        if info["step"] == step:
            STOP.set()

    return before_update


def _pipeline(project, stop_at: int = -1):  # noqa: F811
    config_path, train, dev = project
    overrides = {"paths.train": str(train), "paths.dev": str(dev), "training.eval_frequency": 3,
                 "training.before_update": {"@callbacks": "test-resume-review-stop-at.v1", "step": stop_at}}
    return init_nlp(spacy.util.load_config(config_path, interpolate=False, overrides=overrides))


def _rows(output):
    return [json.loads(line) for line in (output / LOG).read_text().splitlines()]


def test_a_run_stopped_between_evaluations_logs_the_uninterrupted_losses(project, tmp_path):  # noqa: F811
    STOP.clear()
    whole = train_resumable(_pipeline(project), tmp_path / "whole", stop=STOP)
    assert whole["stopped"] == "max steps" and [r["step"] for r in _rows(tmp_path / "whole")] == [0, 3, 6]

    first = train_resumable(_pipeline(project, stop_at=4), tmp_path / "split", stop=STOP)
    assert first["stopped"] == "interrupted" and first["step"] == 5  # steps 0 to 4, the last evaluated 3
    saved = read_state(tmp_path / "split")
    STOP.clear()
    resumed = spacy.load(tmp_path / "split" / MODEL_LAST)
    done = train_resumable(resumed, tmp_path / "split", resume=True, stop=STOP)
    assert done["stopped"] == "max steps" and done["step"] == whole["step"]

    assert _rows(tmp_path / "split") == _rows(tmp_path / "whole")
    assert saved["losses"]["tagger"] > 0 and saved["words"] > 0  # step 4's loss, in no row when it stopped
    assert read_state(tmp_path / "split")["words"] == read_state(tmp_path / "whole")["words"]
    meta = [json.loads((tmp_path / run / MODEL_LAST / "meta.json").read_text())["performance"]
            for run in ("whole", "split")]
    assert meta[0]["tagger_loss"] > 0 and meta[1] == meta[0]


def test_a_state_from_before_it_kept_the_losses_still_resumes(project, tmp_path):  # noqa: F811
    STOP.clear()
    train_resumable(_pipeline(project, stop_at=4), tmp_path / "out", stop=STOP)
    path = tmp_path / "out" / MODEL_LAST / "training_state.json"
    state = json.loads(path.read_text())
    del state["losses"], state["words"]  # as train_resumable wrote it before
    path.write_text(json.dumps(state))
    STOP.clear()
    done = train_resumable(spacy.load(tmp_path / "out" / MODEL_LAST), tmp_path / "out", resume=True, stop=STOP)
    assert done["stopped"] == "max steps" and [r["step"] for r in _rows(tmp_path / "out")] == [0, 3, 6]
