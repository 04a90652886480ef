"""spacy_elmo.resumable_training: a run interrupted and resumed ends where the uninterrupted one does."""
import json
import threading

import numpy
import pytest
import spacy
from spacy.tokens import DocBin
from spacy.util import registry
from thinc.api import fix_random_seed

from spacy_elmo.resumable_training import (
    MODEL_BEST, MODEL_LAST, ResumeError, epoch_batches, optimizer_state, parameter_owners, read_state,
    set_optimizer_state, stop_on_signals, train_resumable,
)
from tests.conftest import tagged_examples, tagger_pipeline

STOP = threading.Event()  # set by the registered callback below at the step a test asks for
STOP_AT = {"step": -1}


@registry.callbacks("test-stop-after-step.v1")
def _stop_after_step():
    def before_update(nlp, info):
        if info["step"] == STOP_AT["step"]:
            STOP.set()  # the loop finishes this step, saves and ends

    return before_update


def _pipeline(allennlp_dir, tmp_path, frozen=False, **training):
    fix_random_seed(0)
    tok2vec = {"@architectures": "spacy-elmo.ElmoListener.v1", "dropout": 0.3}  # dropout draws from the RNG
    nlp, examples, _ = tagger_pipeline(allennlp_dir, tok2vec=tok2vec, frozen=frozen)
    DocBin(docs=[eg.reference for eg in examples] * 3).to_disk(tmp_path / "train.spacy")
    DocBin(docs=[eg.reference for eg in examples]).to_disk(tmp_path / "dev.spacy")
    config = nlp.config
    config["paths"]["train"], config["paths"]["dev"] = str(tmp_path / "train.spacy"), str(tmp_path / "dev.spacy")
    config["training"].update({"eval_frequency": 2, "max_steps": 7, "patience": 0, "dropout": 0.2,
                               "before_update": {"@callbacks": "test-stop-after-step.v1"},
                               "batcher": {"@batchers": "spacy.batch_by_sequence.v1", "size": 4, "get_length": None},
                               **training})
    config["training"]["optimizer"]["learn_rate"] = 0.01
    return nlp


def _params(nlp) -> dict:
    out = {}
    for name, component in nlp.pipeline:
        for i, node in enumerate(component.model.walk()):
            for param in node.param_names:
                if node.has_param(param):
                    out[f"{name}/{i}/{param}"] = node.get_param(param).copy()
            for j, shim in enumerate(node.shims):
                model = getattr(shim, "_model", None)
                for key, value in (model.state_dict().items() if model is not None else []):
                    out[f"{name}/{i}/shim{j}/{key}"] = value.detach().numpy().copy()
    return out


def _rows(output):
    return [json.loads(line) for line in (output / "log.jsonl").read_text().splitlines()]


def test_an_interrupted_fine_tuning_resumes_to_the_same_weights(allennlp_dir, tmp_path):
    STOP.clear()
    STOP_AT["step"] = -1
    whole = train_resumable(_pipeline(allennlp_dir, tmp_path), tmp_path / "whole", stop=STOP)
    assert whole["stopped"] == "max steps" and whole["step"] == 8  # steps 0..7, as spaCy counts them
    STOP_AT["step"] = 4
    first = train_resumable(_pipeline(allennlp_dir, tmp_path), tmp_path / "split", stop=STOP)
    assert first["stopped"] == "interrupted" and first["step"] == 5
    assert read_state(tmp_path / "split")["step"] == 5
    assert [r["step"] for r in _rows(tmp_path / "split")] == [0, 2, 4]
    STOP.clear()
    fix_random_seed(12345)  # as a new process would: the generators elsewhere than where the run stopped
    resumed = spacy.load(tmp_path / "split" / MODEL_LAST)
    assert resumed.get_pipe("elmo").frozen is False
    done = train_resumable(resumed, tmp_path / "split", resume=True, stop=STOP)
    assert done["stopped"] == "max steps" and done["step"] == 8
    assert [r["step"] for r in _rows(tmp_path / "split")] == [0, 2, 4, 6]
    assert _rows(tmp_path / "split") == _rows(tmp_path / "whole")
    expected, got = _params(spacy.load(tmp_path / "whole" / MODEL_LAST)), _params(resumed)
    assert expected.keys() == got.keys() and any(k.startswith("elmo/") for k in got)
    for key in expected:
        numpy.testing.assert_array_equal(got[key], expected[key], err_msg=key)
    assert (done["best_score"], done["best_step"]) == (whole["best_score"], whole["best_step"])
    assert (tmp_path / "split" / MODEL_BEST / "training_state.json").is_file()


def test_patience_carries_over_a_resume(allennlp_dir, tmp_path):
    STOP.clear()
    STOP_AT["step"] = 3
    nlp = _pipeline(allennlp_dir, tmp_path, frozen=True, max_steps=0, patience=2, eval_frequency=1)
    nlp.config["training"]["optimizer"]["learn_rate"] = 0.0  # no update improves the score: stop at step 2
    first = train_resumable(nlp, tmp_path / "out", stop=STOP)
    assert first["stopped"] == "early stopping" and first["best_step"] == 0 and first["step"] == 3
    again = train_resumable(spacy.load(tmp_path / "out" / MODEL_LAST), tmp_path / "out", resume=True)
    assert again["stopped"] == "early stopping" and again["step"] == 3  # already ended: nothing more ran


def test_resuming_without_a_checkpoint_is_a_clear_error(allennlp_dir, tmp_path):
    nlp = _pipeline(allennlp_dir, tmp_path)
    with pytest.raises(ResumeError, match="no training state to resume"):
        train_resumable(nlp, tmp_path / "empty", resume=True)
    (tmp_path / "bad" / MODEL_LAST).mkdir(parents=True)
    (tmp_path / "bad" / MODEL_LAST / "training_state.json").write_text("{not json")
    with pytest.raises(ResumeError, match="not a training state.*--overwrite"):
        train_resumable(nlp, tmp_path / "bad", resume=True)
    with pytest.raises(ResumeError, match="not a training state.*--overwrite"):  # nor a fresh start over it
        train_resumable(nlp, tmp_path / "bad")
    assert train_resumable(nlp, tmp_path / "bad", overwrite=True)["stopped"] == "max steps"


def test_optimizer_state_is_keyed_by_place_not_id(allennlp_dir, tmp_path):
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir, frozen=False)
    for _ in range(3):  # the first update's gradient into the biLM is zero; the second's is applied in the third
        nlp.update(examples, sgd=optimizer)
    state = optimizer_state(optimizer, parameter_owners(nlp))
    assert any(key.startswith("elmo/") and "shim0|" in key for key in state["mom1"])  # the biLM's moments
    nlp.to_disk(tmp_path / "saved")
    other = spacy.load(tmp_path / "saved")
    fresh = other.create_optimizer()
    set_optimizer_state(fresh, parameter_owners(other), state)
    again = optimizer_state(fresh, parameter_owners(other))
    assert again["mom1"].keys() == state["mom1"].keys() and again["nr_update"] == state["nr_update"]
    for key, value in state["mom2"].items():
        numpy.testing.assert_array_equal(again["mom2"][key], value)
    plain = spacy.blank("en")
    plain.add_pipe("tagger")
    plain.initialize(lambda: tagged_examples(plain))
    with pytest.raises(ResumeError, match="different pipeline"):
        set_optimizer_state(plain.create_optimizer(), parameter_owners(plain), state)


def test_epoch_order_depends_on_seed_and_epoch_only():
    def batcher(items):
        for i in range(0, len(items), 2):
            yield items[i:i + 2]

    first = list(epoch_batches(list(range(6)), batcher, seed=3, max_epochs=2))
    assert first == list(epoch_batches(list(range(6)), batcher, seed=3, max_epochs=2))
    assert [e for e, _ in first] == [0, 0, 0, 1, 1, 1]
    assert sorted(x for _, b in first[:3] for x in b) == list(range(6))
    assert first != list(epoch_batches(list(range(6)), batcher, seed=4, max_epochs=2))


def test_a_fresh_start_keeps_an_unfinished_run_unless_told(allennlp_dir, tmp_path):
    STOP.clear()
    STOP_AT["step"] = 1
    first = train_resumable(_pipeline(allennlp_dir, tmp_path), tmp_path / "out", stop=STOP)
    assert first["stopped"] == "interrupted"
    STOP.clear()
    with pytest.raises(ResumeError, match="unfinished run .* at step 2.*--resume.*--overwrite"):
        train_resumable(_pipeline(allennlp_dir, tmp_path), tmp_path / "out", stop=STOP)
    assert read_state(tmp_path / "out")["step"] == 2  # untouched
    STOP_AT["step"] = -1
    again = train_resumable(_pipeline(allennlp_dir, tmp_path), tmp_path / "out", overwrite=True, stop=STOP)
    assert again["stopped"] == "max steps" and read_state(tmp_path / "out")["stopped"] == "max steps"


def test_a_crash_leaves_the_last_evaluation_to_resume(allennlp_dir, tmp_path, monkeypatch):
    STOP.clear()
    STOP_AT["step"] = -1
    nlp = _pipeline(allennlp_dir, tmp_path)
    real_update = type(nlp).update
    calls = {"n": 0}

    def failing_update(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 4:  # the update of step 3, after the evaluation of step 2
            raise MemoryError("injected")
        return real_update(self, *args, **kwargs)

    monkeypatch.setattr(type(nlp), "update", failing_update)
    with pytest.raises(MemoryError, match="injected"):
        train_resumable(nlp, tmp_path / "out", stop=STOP)
    monkeypatch.setattr(type(nlp), "update", real_update)
    state = read_state(tmp_path / "out")
    assert state["step"] == 3 and state["stopped"] is None  # the checkpoint of the evaluation at step 2
    done = train_resumable(spacy.load(tmp_path / "out" / MODEL_LAST), tmp_path / "out", resume=True, stop=STOP)
    assert done["stopped"] == "max steps" and done["step"] == 8


def test_signals_ask_the_loop_to_stop_and_a_second_ctrl_c_interrupts():
    import signal

    stop = threading.Event()
    before = signal.getsignal(signal.SIGTERM)
    with stop_on_signals(stop):
        signal.raise_signal(signal.SIGTERM)
        assert stop.is_set()
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGTERM) is before  # restored


def _gpu_ready() -> bool:
    import importlib.util

    import torch

    return torch.cuda.is_available() and importlib.util.find_spec("cupy") is not None


@pytest.mark.skipif(not _gpu_ready(), reason="needs a CUDA GPU, a CUDA build of torch and cupy (thinc's GPU ops)")
def test_an_interrupted_fine_tuning_resumes_on_a_gpu(allennlp_dir, tmp_path):
    """On a GPU thinc keeps Adam's moments as cupy arrays: the checkpoint must copy them to the host and
    the resume put them back as cupy arrays (tests/regression/test_gpu_review_host_arrays.py simulates
    both on the CPU). cupy's generator is not saved, so the resumed weights are compared loosely."""
    from thinc.api import require_cpu, require_gpu

    require_gpu(0)
    try:
        STOP.clear()
        STOP_AT["step"] = -1
        whole = train_resumable(_pipeline(allennlp_dir, tmp_path), tmp_path / "whole", stop=STOP, use_gpu=0)
        assert whole["stopped"] == "max steps" and whole["step"] == 8
        STOP_AT["step"] = 4
        first = train_resumable(_pipeline(allennlp_dir, tmp_path), tmp_path / "split", stop=STOP, use_gpu=0)
        assert first["stopped"] == "interrupted" and first["step"] == 5
        STOP.clear()
        resumed = spacy.load(tmp_path / "split" / MODEL_LAST)
        assert resumed.get_pipe("elmo").bilm.device.type == "cuda"
        done = train_resumable(resumed, tmp_path / "split", resume=True, stop=STOP, use_gpu=0)
        assert done["stopped"] == "max steps" and done["step"] == 8
        assert [r["step"] for r in _rows(tmp_path / "split")] == [0, 2, 4, 6]
        doc = spacy.load(tmp_path / "split" / MODEL_LAST)("the cat sat on the mat")
        assert all(t.tag_ for t in doc)  # the resumed pipeline loads and tags
    finally:
        STOP_AT["step"] = -1
        require_cpu()
