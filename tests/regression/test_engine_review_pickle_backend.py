"""Regression: a pickled biLM kept the engine `auto` had resolved to, and crashed where it cannot run.

`Engine.__getstate__` pickled the engine object itself: a biLM pickled where
`auto` meant `onednn+kernel` and unpickled in a process without the compiled
kernel (a Ray worker, a wheel built without the extension) failed on its
first call ('NoneType' object has no attribute 'update'). An engine now
pickles as its setting (`Engine.__reduce__` -> `make_engine(setting)`): `auto`
resolves again where it is unpickled, and an explicit backend that cannot run
there is a `BackendError` at once.
"""
import copy
import pickle

import pytest
import torch

from spacy_elmo.bilm.engine import BackendError, OneDNNKernelEngine, backends, cell_kernel
from spacy_elmo.io import load_bilm


@pytest.fixture
def kernel_bilm(allennlp_dir):
    if backends.resolve("auto") != "onednn+kernel":
        pytest.skip("`auto` is not onednn+kernel here")
    bilm = load_bilm(allennlp_dir)
    bilm.embed([["a", "b"]])  # something kept
    assert type(bilm.engine) is OneDNNKernelEngine
    return bilm


def _without_the_kernel(monkeypatch):
    """This process as one where the extension was not built."""
    monkeypatch.setattr(cell_kernel, "_lstm_cell", None)
    monkeypatch.setattr(cell_kernel, "_AVAILABLE", None)
    assert backends.unavailable_reason("onednn+kernel")


def test_auto_resolves_again_where_it_is_unpickled(kernel_bilm, monkeypatch):
    data = pickle.dumps(kernel_bilm)
    _without_the_kernel(monkeypatch)
    there = pickle.loads(data)
    assert there.backend == "auto" and there.engine.name == backends.resolve("auto") != "onednn+kernel"
    assert there.engine is there.lstm.engine is there.token_encoder.engine  # still one engine
    for mode in (False, True):
        there.train(mode)
        with torch.set_grad_enabled(mode):
            there([["a", "b"], ["c"]])


def test_an_explicit_backend_that_cannot_run_there_is_a_backend_error(kernel_bilm, monkeypatch):
    kernel_bilm.backend = "onednn+kernel"
    data = pickle.dumps(kernel_bilm)
    _without_the_kernel(monkeypatch)
    with pytest.raises(BackendError, match="onednn\\+kernel"):
        pickle.loads(data)


def test_a_copy_is_a_new_engine_of_the_same_setting(allennlp_dir):
    bilm = load_bilm(allennlp_dir)
    bilm.backend = "mkl"
    bilm.embed([["a", "b"]])
    clone = copy.deepcopy(bilm)
    assert clone.backend == "mkl" and clone.engine is not bilm.engine and not clone.engine._kept
    assert clone.engine is clone.lstm.engine is clone.token_encoder.engine
