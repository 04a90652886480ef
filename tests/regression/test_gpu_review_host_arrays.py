"""Regression: four paths that only a GPU reaches, simulated on the CPU (a review of the GPU code paths).

- The resumable training scripts with `--gpu-id`: thinc keeps Adam's moments and averages as cupy
  arrays, and `optimizer_state` converted them with `numpy.asarray`, which cupy refuses ("Implicit
  conversion to a NumPy array is not allowed"): no checkpoint could be written. `--resume` then put
  numpy arrays back into an optimizer whose cupy kernels refuse them. Now `thinc.util.to_numpy`
  on the way out and the current ops' `asarray_f` on the way in.
- `doc._.elmo = <cupy array>` was kept as it was, so `*._.elmo_vector`, `DocBin` and `to_bytes`
  failed on it; the doc now keeps a host copy.
- The vector hooks' fallback read a cupy `doc.tensor` (spaCy's own tok2vec on a GPU) with
  `numpy.asarray`.
- `mixed_precision = true` was switched on by `torch.cuda.is_available()`: on a machine with CUDA
  running on its CPU, thinc's gradient scaler refused the CPU gradients at the first fine-tuning
  backward pass. It now follows thinc's current ops (cupy's after `require_gpu`).

A fake cupy array stands for cupy's: it refuses implicit conversion and has `.get()`, and thinc's
`to_numpy` is shown it through `thinc.util.cupy`.
"""
import numpy
import pytest
import spacy
import thinc.util
import torch
from thinc.api import NumpyOps

from spacy_elmo import resumable_training
from spacy_elmo.pipeline import extensions


class FakeCupyArray:
    """What matters of cupy.ndarray here: no implicit host conversion, `.get()` copies to the host."""

    def __init__(self, array):
        self._array = numpy.asarray(array)
        self.shape, self.ndim, self.dtype, self.size = self._array.shape, self._array.ndim, self._array.dtype, \
            self._array.size

    def __array__(self, *args, **kwargs):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()`")

    def __getitem__(self, index):
        return FakeCupyArray(self._array[index])

    def get(self):
        return self._array.copy()


class FakeCupyModule:
    ndarray = FakeCupyArray


@pytest.fixture
def fake_cupy(monkeypatch):
    monkeypatch.setattr(thinc.util, "has_cupy", True)
    monkeypatch.setattr(thinc.util, "cupy", FakeCupyModule, raising=False)


class Optimizer:
    """thinc's optimizer tables as a GPU run holds them."""

    def __init__(self, values):
        self.mom1, self.mom2, self.averages = dict(values), {}, None
        for table in resumable_training._OPTIMIZER_COUNTS:
            setattr(self, table, {})


def test_optimizer_state_copies_gpu_moments_to_the_host(fake_cupy):
    key = (7, "W")
    state = resumable_training.optimizer_state(Optimizer({key: FakeCupyArray([1.0, 2.0, 3.0])}), {key: "tagger|W"})
    assert isinstance(state["mom1"]["tagger|W"], numpy.ndarray)
    numpy.testing.assert_array_equal(state["mom1"]["tagger|W"], [1.0, 2.0, 3.0])


def test_set_optimizer_state_makes_arrays_of_the_current_ops():
    made = []

    class RecordingOps(NumpyOps):
        def asarray_f(self, data, *, dtype="float32"):
            made.append(data)
            return super().asarray_f(data, dtype=dtype)

    key = (7, "W")
    optimizer = Optimizer({key: numpy.zeros(3, dtype="float32")})
    saved = {"mom1": {"tagger|W": [1.0, 2.0, 3.0]}, "mom2": {}, "averages": {}}
    saved.update({table: {} for table in resumable_training._OPTIMIZER_COUNTS})
    resumable_training.set_optimizer_state(optimizer, {key: "tagger|W"}, saved, ops=RecordingOps())
    assert len(made) == 1
    numpy.testing.assert_array_equal(optimizer.mom1[key], [1.0, 2.0, 3.0])
    assert optimizer.mom1[key].flags.writeable  # not msgpack's read-only view


def test_layers_given_as_a_gpu_array_are_kept_on_the_host(fake_cupy):
    doc = spacy.blank("en")("a b c")
    layers = numpy.arange(36, dtype="float32").reshape(3, 3, 4)
    doc._.elmo = FakeCupyArray(layers)
    assert isinstance(doc._.elmo, numpy.ndarray)
    numpy.testing.assert_array_equal(doc._.elmo, layers)
    assert doc[1]._.elmo_vector.shape == (4,)


def test_layers_given_as_a_torch_tensor_are_kept_as_numpy():
    doc = spacy.blank("en")("a b c")
    doc._.elmo = torch.ones(3, 3, 4)
    assert isinstance(doc._.elmo, numpy.ndarray) and doc._.elmo.shape == (3, 3, 4)


def test_hooks_fallback_reads_a_gpu_doc_tensor(fake_cupy):
    doc = spacy.blank("en")("a b c")
    extensions.set_vector_hooks(doc)
    doc.tensor = FakeCupyArray(numpy.ones((3, 4), dtype="float32"))
    assert isinstance(doc.vector, numpy.ndarray) and doc.vector.shape == (4,)
    numpy.testing.assert_array_equal(doc[0:2].vector, numpy.ones(4, dtype="float32"))


def test_mixed_precision_on_a_cuda_machine_running_on_its_cpu(monkeypatch):
    from spacy_elmo.layers.bilm_model import ElmoBiLM

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # CUDA present, thinc's ops numpy's
    model = ElmoBiLM(bilm={"lstm_dim": 16, "projection_dim": 8, "n_layers": 1, "filters": [[1, 4], [2, 4]],
                           "n_highway": 1}, mixed_precision=True)
    model.attrs["frozen"] = False
    docs = [spacy.blank("en")("a small test .")]
    outputs, backprop = model.begin_update(docs)
    backprop([y * 0 + 1 for y in outputs])  # thinc's scaler refused CPU gradients here
    shim = model.layers[0].shims[0]
    assert not shim._mixed_precision
    assert any(p.grad is not None for p in shim._model.parameters())


def test_a_bfloat16_tensor_is_kept_as_float32():
    doc = spacy.blank("en")("a b c")
    doc._.elmo = torch.ones(3, 3, 4, dtype=torch.bfloat16)  # numpy has no bfloat16: it was a TypeError
    assert isinstance(doc._.elmo, numpy.ndarray) and doc._.elmo.dtype == numpy.float32
