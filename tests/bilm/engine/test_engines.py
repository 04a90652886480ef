"""The engines: one per backend name, made once; availability, and what each runs for which tensors."""
import pytest
import torch

from spacy_elmo.bilm import BiLM, BiLMConfig
from spacy_elmo.bilm.engine import ENGINES, BackendError, backends, make_engine
from spacy_elmo.bilm.engine import onednn_ops as onednn


def test_auto_is_the_best_available_and_reference_and_mkl_run_anywhere():
    available = backends.available()
    assert available[:2] == ["reference", "mkl"]
    assert backends.resolve("auto") == available[-1]
    assert [b for b in backends.BACKENDS if b in available] == available


def test_unknown_or_unavailable_backends_are_one_clear_error(monkeypatch):
    with pytest.raises(BackendError, match="unknown backend 'fast'; choose one of"):
        backends.check("fast")
    with pytest.raises(BackendError, match="unknown backend"):
        BiLM(BiLMConfig(lstm_dim=8, projection_dim=4, n_layers=1, filters=((1, 4),), n_highway=0), backend="MKL")

    def broken(*args):
        raise RuntimeError("could not create a primitive descriptor")

    monkeypatch.setattr(onednn, "_WORKS", None)
    monkeypatch.setattr(onednn, "_LINEAR", broken)
    assert backends.resolve("auto") == "mkl"
    with pytest.raises(BackendError, match="backend 'onednn': this PyTorch build's oneDNN"):
        backends.check("onednn")


def test_one_engine_class_per_backend_and_auto_resolves_once():
    assert set(ENGINES) == set(backends.NAMES)
    for name in backends.available(backends.NAMES):
        engine = make_engine(name)
        assert type(engine) is ENGINES[name] and engine.name == engine.setting == name
    auto = make_engine("auto")
    assert auto.setting == "auto" and auto.name == backends.resolve("auto")


def test_what_runs_depends_on_the_tensors_not_on_autograd():
    if "onednn+kernel" not in backends.available():
        pytest.skip("needs the onednn+kernel backend")
    x = torch.zeros(3, 4)
    kernel, onednn_engine, mkl = make_engine("onednn+kernel"), make_engine("onednn"), make_engine("mkl")
    for grad in (False, True):  # the same answers with and without autograd
        with torch.set_grad_enabled(grad):
            assert kernel.library(x) == onednn_engine.library(x) == "onednn" and mkl.library(x) == "mkl"
            assert onednn_engine.library(x.double()) == "mkl"  # oneDNN computes float32 only
            assert kernel.reads_token_table(x) and not onednn_engine.reads_token_table(x)
            assert not kernel.reads_token_table(x.double())
            with torch.autocast("cpu", dtype=torch.bfloat16):
                assert kernel.library(x) == "mkl" and not kernel.reads_token_table(x)
            # the training recurrence: the kernel's cell for float32 CPU tensors on onednn+kernel only
            assert kernel.trains_with_kernel(x) and not kernel.trains_with_kernel(x.double())
            assert not onednn_engine.trains_with_kernel(x) and not mkl.trains_with_kernel(x)


def test_the_mode_picks_inference_or_training(monkeypatch):
    """eval() runs the engine's inference path, train() its training path, whatever autograd's state."""
    bilm = BiLM(BiLMConfig(lstm_dim=8, projection_dim=4, n_layers=1, filters=((1, 4),), n_highway=0), backend="mkl")
    bilm.reset_parameters(seed=0)
    calls = []
    for path in ("infer_stack", "train_stack"):
        real = getattr(bilm.engine, path)
        monkeypatch.setattr(bilm.engine, path, lambda *a, _p=path, _r=real: calls.append(_p) or _r(*a))
    for grad in (True, False):
        with torch.set_grad_enabled(grad):
            for train, path in ((False, "infer_stack"), (True, "train_stack")):
                calls.clear()
                bilm.train(train)([["a", "b"]])
                assert calls and set(calls) == {path}


def test_setting_the_backend_reaches_every_part_and_clears_computed_values(allennlp_bilm):
    allennlp_bilm.enable_cache()
    allennlp_bilm.embed([["A", "test", "."]])
    assert allennlp_bilm._start is not None and allennlp_bilm.engine._kept
    allennlp_bilm.backend = "reference"
    assert allennlp_bilm.lstm.engine is allennlp_bilm.token_encoder.engine is allennlp_bilm.engine
    assert allennlp_bilm.engine.name == allennlp_bilm.lstm.engine.name == "reference"
    assert allennlp_bilm._start is None and not allennlp_bilm.engine._kept
    assert allennlp_bilm.token_cache is not None and not len(allennlp_bilm.token_cache)
