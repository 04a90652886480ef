"""Regression: a run killed while model-best was being written kept a stale model-best for good.

`train_resumable`'s save replaced model-last (whose state records the evaluation as the best)
before it copied model-last to model-best. A kill between the two left model-last saying "best at
step 4" beside step 2's model-best; --resume went on from model-last, no later evaluation was
better, and the run exited 0 with model-best from an earlier step. model-best is now written
before the model-last that records it: killed before model-best is in place, model-last is the
previous checkpoint and the resumed run makes that evaluation again; killed after, model-best is
one evaluation ahead and the replay writes it again. Either way the resumed run ends with the
uninterrupted run's model-best. An output an older version left so is put right on --resume
(model-best rewritten from model-last, which holds the best evaluation's weights); where model-last
has trained on since, a ResumeWarning says that model-best cannot be rewritten. The kill is an
exception that no handler catches, raised by a patched copy or rename at a fixed call; stops come
from a registered before_update callback at a fixed step (no signals, no clock).
"""
import io
import json
import shutil
from pathlib import Path

import pytest
import spacy
from spacy.training.initialize import init_nlp

import spacy_elmo.resumable_training as resumable
from spacy_elmo.resumable_training import LOG, MODEL_BEST, MODEL_LAST, ResumeWarning, read_state, train_resumable
from tests.regression.test_resume_review_pending_losses import STOP  # and its stop-at callback, registered
from tests.regression.test_train_script_exit_status_and_settings import project  # noqa: F401


class Killed(BaseException):
    """A kill: the process ends where it is (no `except Exception` of the code under test catches it)."""


def _pipeline(project, stop_at: int = -1):  # noqa: F811
    """The tiny tagger (evaluations at steps 0, 2, 4, 6), stopping itself after step `stop_at`."""
    config_path, train, dev = project
    overrides = {"paths.train": str(train), "paths.dev": str(dev),
                 "training.before_update": {"@callbacks": "test-resume-review-stop-at.v1", "step": stop_at}}
    return init_nlp(spacy.util.load_config(config_path, interpolate=False, overrides=overrides))


def _run(project, output: Path, stop_at: int = -1) -> dict:  # noqa: F811
    STOP.clear()
    return train_resumable(_pipeline(project, stop_at), output, stop=STOP, stdout=io.StringIO())


def _resume(output: Path) -> dict:
    STOP.clear()
    return train_resumable(spacy.load(output / MODEL_LAST), output, resume=True, stop=STOP, stdout=io.StringIO())


def _best(output: Path) -> tuple:
    """model-best's weights (each component's model) and what its training state says."""
    nlp = spacy.load(output / MODEL_BEST)
    state = json.loads((output / MODEL_BEST / "training_state.json").read_text())
    pipes: dict = dict(nlp.pipeline)  # components with a model (mypy's view of get_pipe has none)
    return ({name: pipes[name].model.to_bytes() for name in nlp.pipe_names},
            {key: state[key] for key in ("step", "best_step", "stopped")})


def _uninterrupted(project, tmp_path) -> tuple:  # noqa: F811
    """The uninterrupted run's output, how many times it wrote model-best, and its best step."""
    whole = tmp_path / "whole"
    done = _run(project, whole)
    best, writes = None, 0
    for row in (json.loads(line) for line in (whole / LOG).read_text().splitlines()):
        if best is None or row["score"] > best:
            best, writes = row["score"], writes + 1
    assert done["stopped"] == "max steps" and writes >= 2 and done["best_step"] > 0
    return whole, writes, done["best_step"]


def test_killed_while_model_best_is_copied(monkeypatch, project, tmp_path):  # noqa: F811
    whole, writes, _ = _uninterrupted(project, tmp_path)
    real = shutil.copytree
    copies = []

    def copytree(src, dst, *args, **kwargs):
        if Path(dst).name == f"{MODEL_BEST}.tmp":
            copies.append(dst)
            if len(copies) == writes:  # the last best evaluation's model-best
                raise Killed
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(shutil, "copytree", copytree)
    output = tmp_path / "split"
    with pytest.raises(Killed):
        _run(project, output)
    monkeypatch.setattr(shutil, "copytree", real)
    done = _resume(output)
    assert done["stopped"] == "max steps" and read_state(output) is not None
    assert _best(output) == _best(whole)


def test_killed_between_model_best_and_model_last(monkeypatch, project, tmp_path):  # noqa: F811
    whole, writes, _ = _uninterrupted(project, tmp_path)
    real = resumable._replace_dir
    replaced = {"best": 0, "killed": False}

    def replace_dir(written: Path, final: Path) -> None:
        if final.name == MODEL_LAST and replaced["best"] == writes and not replaced["killed"]:
            replaced["killed"] = True
            raise Killed
        real(written, final)
        replaced["best"] += final.name == MODEL_BEST

    monkeypatch.setattr(resumable, "_replace_dir", replace_dir)
    output = tmp_path / "split"
    with pytest.raises(Killed):
        _run(project, output)
    monkeypatch.setattr(resumable, "_replace_dir", real)
    assert _resume(output)["stopped"] == "max steps"
    assert _best(output) == _best(whole)


def _stale_model_best(project, tmp_path, output: Path, stop_at: int) -> None:  # noqa: F811
    """What a kill while model-best was written left before it came first: model-last (stopped after
    step `stop_at`) records the best evaluation, model-best is step 0's."""
    assert _run(project, output, stop_at=stop_at)["stopped"] == "interrupted"
    early = tmp_path / "early"
    _run(project, early, stop_at=0)
    shutil.rmtree(output / MODEL_BEST)
    shutil.copytree(early / MODEL_BEST, output / MODEL_BEST)


def test_an_older_versions_stale_model_best_is_rewritten_on_resume(project, tmp_path):  # noqa: F811
    whole, _, best_step = _uninterrupted(project, tmp_path)
    output = tmp_path / "split"
    _stale_model_best(project, tmp_path, output, stop_at=best_step)  # model-last: the best evaluation's
    assert _best(output) != _best(whole)
    assert _resume(output)["stopped"] == "max steps"
    assert _best(output) == _best(whole)


def test_a_stale_model_best_that_cannot_be_rewritten_is_a_warning(project, tmp_path):  # noqa: F811
    _, _, best_step = _uninterrupted(project, tmp_path)
    output = tmp_path / "split"
    _stale_model_best(project, tmp_path, output, stop_at=best_step + 1)  # model-last trained on since
    with pytest.warns(ResumeWarning, match=r"model-best is not the best evaluation's .*--overwrite"):
        assert _resume(output)["stopped"] == "max steps"
