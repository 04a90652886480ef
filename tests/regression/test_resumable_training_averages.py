"""With `use_averages = true`, a resumed run goes on from the parameters, not from their averages.

model-last is saved, as `spacy train` saves it, with the optimizer's averages
in place; the run used to resume from those files, so its live weights (and
every later checkpoint) drifted from the uninterrupted run's. The parameters'
own values now travel in training_state.msg. The run is stopped by the
registered before_update callback at a fixed step (no signals, no clock).
"""
import srsly
import numpy
import pytest
import spacy
from thinc.api import fix_random_seed

from spacy_elmo.resumable_training import MODEL_BEST, MODEL_LAST, ResumeWarning, read_state, train_resumable
from tests.test_resumable_training import STOP, STOP_AT, _params, _pipeline, _rows


def _averaging_pipeline(allennlp_dir, tmp_path):
    nlp = _pipeline(allennlp_dir, tmp_path)  # the biLM fine-tuned: a shim's parameters as well as thinc's
    nlp.config["training"]["optimizer"]["use_averages"] = True
    return nlp


def _split_run(allennlp_dir, tmp_path, at_step: int):
    STOP.clear()
    STOP_AT["step"] = at_step
    first = train_resumable(_averaging_pipeline(allennlp_dir, tmp_path), tmp_path / "split", stop=STOP)
    assert first["stopped"] == "interrupted" and first["step"] == at_step + 1
    STOP.clear()
    STOP_AT["step"] = -1


def _saved(output):
    return srsly.msgpack_loads((output / MODEL_LAST / "training_state.msg").read_bytes())


def _by_place(table) -> dict:
    """"owner|parameter" keys as `_params` spells them: "owner/parameter"."""
    return {key.replace("|", "/"): value for key, value in table.items()}


def test_with_averages_a_resumed_run_ends_with_the_uninterrupted_weights(allennlp_dir, tmp_path):
    STOP.clear()
    STOP_AT["step"] = -1
    whole_nlp = _averaging_pipeline(allennlp_dir, tmp_path)
    whole = train_resumable(whole_nlp, tmp_path / "whole", stop=STOP)
    assert whole["stopped"] == "max steps" and whole["step"] == 8
    _split_run(allennlp_dir, tmp_path, at_step=4)
    fix_random_seed(12345)  # as a new process would
    resumed = spacy.load(tmp_path / "split" / MODEL_LAST)
    done = train_resumable(resumed, tmp_path / "split", resume=True, stop=STOP)
    assert done["stopped"] == "max steps" and done["step"] == 8
    assert _rows(tmp_path / "split") == _rows(tmp_path / "whole")

    live_whole, live_resumed = _params(whole_nlp), _params(resumed)
    assert live_whole.keys() == live_resumed.keys() and any(k.startswith("elmo/") for k in live_whole)
    for key in live_whole:  # what training goes on with: bit for bit
        numpy.testing.assert_array_equal(live_resumed[key], live_whole[key], err_msg=key)
    for name in (MODEL_LAST, MODEL_BEST):  # what users load: bit for bit
        expected, got = _params(spacy.load(tmp_path / "whole" / name)), _params(spacy.load(tmp_path / "split" / name))
        assert expected.keys() == got.keys()
        for key in expected:
            numpy.testing.assert_array_equal(got[key], expected[key], err_msg=f"{name}: {key}")

    # model-last still holds the averages (as spaCy saves it); the parameters themselves are in the state
    extra = _saved(tmp_path / "split")
    averages, live = _by_place(extra["optimizer"]["averages"]), _by_place(extra["live"])
    assert averages.keys() == live.keys() and any(k.startswith("elmo/") and "/shim0/" in k for k in averages)
    on_disk = _params(spacy.load(tmp_path / "split" / MODEL_LAST))
    for key in averages:
        numpy.testing.assert_array_equal(on_disk[key], averages[key], err_msg=key)
        numpy.testing.assert_array_equal(live_resumed[key], live[key], err_msg=key)
    assert any(not numpy.array_equal(on_disk[key], live[key]) for key in averages)


def test_without_averages_nothing_more_is_kept(allennlp_dir, tmp_path):
    STOP.clear()
    STOP_AT["step"] = 2
    train_resumable(_pipeline(allennlp_dir, tmp_path), tmp_path / "out", stop=STOP)
    STOP.clear()
    STOP_AT["step"] = -1
    extra = _saved(tmp_path / "out")
    assert extra["live"] == {} and not extra["optimizer"]["averages"]


def test_an_older_state_without_the_parameters_resumes_from_the_averages_with_a_warning(allennlp_dir, tmp_path):
    _split_run(allennlp_dir, tmp_path, at_step=4)
    path = tmp_path / "split" / MODEL_LAST / "training_state.msg"
    extra = srsly.msgpack_loads(path.read_bytes())
    del extra["live"]  # as train_resumable wrote it before it kept them
    path.write_bytes(srsly.msgpack_dumps(extra))
    resumed = spacy.load(tmp_path / "split" / MODEL_LAST)
    with pytest.warns(ResumeWarning, match="averaged weights"):
        done = train_resumable(resumed, tmp_path / "split", resume=True, stop=STOP)
    assert done["stopped"] == "max steps" and done["step"] == 8
    assert read_state(tmp_path / "split")["stopped"] == "max steps"
    assert "live" in _saved(tmp_path / "split")  # the new checkpoints have them
