"""`spacy-elmo.ElmoBiLM.v1`: the biLM as a thinc Model over Docs.

    Model[List[Doc], List[Floats3d]]: per doc, every layer, (L+1, len(doc), width)

The torch BiLM lives in an `ElmoShim` (a PyTorchShim that serializes the
native format, so a saved pipeline rebuilds the biLM without the original
files). Where the weights come from:

* `bilm` sizes given in the config: a fresh, randomly initialised biLM of
  those sizes (to be loaded at `nlp.initialize()` or fine-tuned);
* otherwise the weights directory the component names (`weights`), or the
  package's embedded English model; loaded on first use, so that a pipeline
  loaded from disk never needs them.

Frozen (the default, as in the paper): no gradient reaches the biLM, and
during training the layers of a doc are computed once and reused in later
epochs (`doc_cache_tokens` bounds that cache). Not frozen: the listeners'
gradients flow into the biLM and the optimizer updates it.
"""
from collections import OrderedDict
from contextlib import nullcontext as _nullcontext
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy
import srsly
import torch
from spacy.util import registry
from thinc.api import Model, PyTorchShim
from thinc.types import Floats3d
from thinc.util import get_torch_default_device, torch2xp, xp2torch

from ..bilm.config import BiLMConfig
from ..bilm.model import BiLM, length_sorted_batches
from .segments import doc_segments, segments_key

InT = List[Any]  # List[Doc]; spaCy is not imported here
OutT = List[Floats3d]


class ElmoShim(PyTorchShim):
    """Holds the torch BiLM (possibly not loaded yet) and serializes it in the native format."""

    def __init__(self, bilm: Optional[BiLM] = None, mixed_precision: bool = False) -> None:
        super().__init__(
            bilm,
            mixed_precision=mixed_precision,
            serialize_model=_serialize_bilm,
            deserialize_model=_deserialize_bilm,
        )

    @property
    def device(self):
        if self._model is None:
            return get_torch_default_device()
        return super().device

    def to_device(self, device_type: str, device_id: int) -> None:
        if self._model is not None:
            super().to_device(device_type, device_id)

    def finish_update(self, optimizer) -> None:
        if self._model is not None:
            super().finish_update(optimizer)


def _serialize_bilm(bilm: Optional[BiLM]) -> bytes:
    from safetensors.torch import save

    if bilm is None:
        return srsly.msgpack_dumps({"empty": True})
    state = {k: v.detach().cpu().contiguous() for k, v in bilm.state_dict().items()}
    payload = {
        "config": bilm.config.to_dict(),
        "boundary_strings": bilm.boundary_strings,
        "vocab": bilm.input_vocab.words if bilm.input_vocab is not None else None,
        "state": save(state),
    }
    return srsly.msgpack_dumps(payload)


def _deserialize_bilm(old: Optional[BiLM], data: bytes, device) -> Optional[BiLM]:
    from safetensors.torch import load

    from ..bilm.vocab import Vocabulary

    payload = srsly.msgpack_loads(data)
    if payload.get("empty"):
        return old
    config = BiLMConfig.from_dict(payload["config"], source="serialized elmo component")
    vocab = Vocabulary(payload["vocab"]) if payload.get("vocab") else None
    bilm = BiLM(config, vocab=vocab, boundary_strings=payload.get("boundary_strings", False))
    bilm.load_state_dict(load(payload["state"]))
    bilm.to(device)
    bilm.eval()
    return bilm


@registry.architectures("spacy-elmo.ElmoBiLM.v1")
def ElmoBiLM(
    bilm: Optional[Dict[str, Any]] = None,
    max_window: int = 64,
    segmentation: str = "auto",
    skip_whitespace: bool = True,
    batch_tokens: int = 4096,
    token_cache_size: int = 50_000,
    doc_cache_tokens: int = 2_000_000,
    mixed_precision: bool = False,
    seed: int = 0,
) -> Model[InT, OutT]:
    """The biLM over Docs; see the module docstring.

    bilm: explicit sizes (any `BiLMConfig` field, e.g. lstm_dim, projection_dim,
        n_layers, filters) for a fresh, randomly initialised biLM.
    max_window: most tokens the biLM reads from one zero state.
    segmentation: "auto" (sentences when the doc has them, else windows),
        "sents" or "windows".
    token_cache_size: context-free token vectors kept across batches at
        inference (0: off).
    doc_cache_tokens: tokens whose layers a frozen biLM keeps between epochs
        during training (0: off).
    mixed_precision: run the biLM under bfloat16 autocast on CUDA (float16
        where the card has no bfloat16); the layers come back as float32.
        No effect on CPU.
    """
    from .segments import SEGMENTATIONS

    if segmentation not in SEGMENTATIONS:
        raise ValueError(f"ElmoBiLM: segmentation must be one of {SEGMENTATIONS}, got {segmentation!r}")
    if max_window < 1 or batch_tokens < 1:
        raise ValueError("ElmoBiLM: max_window and batch_tokens must be >= 1")
    fresh = None
    if bilm:
        settings = dict(bilm)
        if "filters" in settings:
            settings["filters"] = tuple(tuple(f) for f in settings["filters"])
        fresh = BiLM(BiLMConfig(**settings))
        fresh.reset_parameters(seed)
    model: Model[InT, OutT] = Model(
        "elmo-bilm",
        forward,
        init=init,
        shims=[ElmoShim(fresh, mixed_precision=mixed_precision)],
        dims={"nO": fresh.width if fresh else None, "nL": fresh.n_layers if fresh else None},
        attrs={
            "max_window": max_window,
            "segmentation": segmentation,
            "skip_whitespace": skip_whitespace,
            "batch_tokens": batch_tokens,
            "token_cache_size": token_cache_size,
            "doc_cache": _DocCache(doc_cache_tokens),
            "mixed_precision": mixed_precision,
            "frozen": True,
            "weights": None,  # set by the component: a directory, or None for the default
            "fresh": fresh is not None,
        },
    )
    return model


def init(model: Model[InT, OutT], X: Optional[InT] = None, Y=None) -> Model[InT, OutT]:
    get_bilm(model)
    return model


def set_bilm(model: Model, bilm: BiLM) -> None:
    """Install a biLM (e.g. loaded at initialize time) into the model."""
    shim = model.shims[0]
    bilm.to(shim.device)
    shim._model = bilm
    model.attrs["fresh"] = False
    model.attrs["doc_cache"].clear()
    _configure(model, bilm)


def get_bilm(model: Model) -> BiLM:
    """The torch BiLM, loading it on first use."""
    shim = model.shims[0]
    bilm = shim._model
    if bilm is None:
        from ..io import load_bilm

        bilm = load_bilm(model.attrs.get("weights"))
        bilm.to(shim.device)
        shim._model = bilm
    if not model.has_dim("nO") or model.get_dim("nO") is None:
        _configure(model, bilm)
    return bilm


def _configure(model: Model, bilm: BiLM) -> None:
    for name, value in (("nO", bilm.width), ("nL", bilm.n_layers)):
        if model.has_dim(name) and model.get_dim(name) is not None and model.get_dim(name) != value:
            # a different biLM was installed: dims follow it
            model._dims[name] = value
        else:
            model.set_dim(name, value)
    _set_token_cache(model, bilm)


def _set_token_cache(model: Model, bilm: BiLM) -> None:
    size = model.attrs["token_cache_size"]
    if size and model.attrs["frozen"] and bilm.token_cache is None:
        bilm.enable_cache(size)
    elif (not size or not model.attrs["frozen"]) and bilm.token_cache is not None:
        bilm.disable_cache()


def forward(model: Model[InT, OutT], docs: InT, is_train: bool) -> Tuple[OutT, Callable]:
    bilm = get_bilm(model)
    _set_token_cache(model, bilm)
    if not is_train or model.attrs["frozen"]:
        outputs = predict_layers(model, bilm, docs, use_doc_cache=is_train)
        return [model.ops.asarray3f(o) for o in outputs], _no_backprop
    return _forward_finetune(model, bilm, docs)


def _no_backprop(d_outputs: OutT) -> InT:
    return []


def _segments(model: Model, doc) -> List[List[int]]:
    attrs = model.attrs
    return doc_segments(doc, attrs["max_window"], attrs["segmentation"], attrs["skip_whitespace"])


def predict_layers(model: Model, bilm: BiLM, docs: InT, use_doc_cache: bool = False) -> List[numpy.ndarray]:
    """(L+1, len(doc), width) float32 numpy arrays, no gradient."""
    n_layers, width = bilm.n_layers, bilm.width
    outputs: List[Optional[numpy.ndarray]] = [None] * len(docs)
    cache: _DocCache = model.attrs["doc_cache"]
    jobs: List[Tuple[int, List[int]]] = []  # (doc position, token indices)
    sentences: List[List[str]] = []
    keys = {}
    for d, doc in enumerate(docs):
        segments = _segments(model, doc)
        if use_doc_cache and cache.enabled:
            key = segments_key(doc, segments)
            cached = cache.get(key)
            if cached is not None and cached.shape[1] == len(doc):
                outputs[d] = cached
                continue
            keys[d] = key
        outputs[d] = numpy.zeros((n_layers, len(doc), width), dtype=numpy.float32)
        for segment in segments:
            jobs.append((d, segment))
            sentences.append([doc[i].text for i in segment])
    if sentences:
        batches = bilm.embed_batches(sentences, batch_tokens=model.attrs["batch_tokens"], precision=_precision(model, bilm))
        for positions, arrays in batches:
            for p, array in zip(positions, arrays):
                d, segment = jobs[p]
                outputs[d][:, segment] = array
    for d, key in keys.items():
        cache.put(key, outputs[d])
    return outputs  # type: ignore[return-value]


def _precision(model: Model, bilm: BiLM) -> str:
    """bfloat16 autocast (float16 where bf16 is unsupported) with mixed_precision on CUDA."""
    if not model.attrs.get("mixed_precision") or bilm.device.type != "cuda":
        return "float32"
    return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"


def _forward_finetune(model: Model, bilm: BiLM, docs: InT):
    """Layers with gradients into the biLM (frozen = false)."""
    shim: ElmoShim = model.shims[0]
    n_layers, width = bilm.n_layers, bilm.width
    jobs: List[Tuple[int, List[int]]] = []
    sentences: List[List[str]] = []
    for d, doc in enumerate(docs):
        for segment in _segments(model, doc):
            jobs.append((d, segment))
            sentences.append([doc[i].text for i in segment])
    bilm.train()
    torch_outputs: List[torch.Tensor] = []
    order: List[int] = []
    precision = _precision(model, bilm)
    autocast = (
        torch.autocast(device_type="cuda", dtype=getattr(torch, precision)) if precision != "float32" else _nullcontext()
    )
    with autocast:
        for batch in length_sorted_batches([len(s) for s in sentences], model.attrs["batch_tokens"], 256):
            out = bilm([sentences[i] for i in batch])
            torch_outputs.extend(o.float() for o in out.unpadded())
            order.extend(batch)
    by_job = dict(zip(order, torch_outputs))
    ops = model.ops
    outputs = [ops.alloc3f(n_layers, len(doc), width) for doc in docs]
    for j, (d, segment) in enumerate(jobs):
        outputs[d][:, segment] = torch2xp(by_job[j].detach())

    def backprop(d_outputs: OutT) -> InT:
        grads = []
        tensors = []
        for j, (d, segment) in enumerate(jobs):
            grads.append(xp2torch(ops.xp.ascontiguousarray(d_outputs[d][:, segment]), device=shim.device))
            tensors.append(by_job[j])
        if tensors:
            torch.autograd.backward(tensors, grad_tensors=grads)
        return []

    return outputs, backprop


class _DocCache:
    """Layers of docs already seen in training (frozen biLM), bounded in tokens, LRU."""

    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max_tokens
        self._data: "OrderedDict[tuple, numpy.ndarray]" = OrderedDict()
        self._tokens = 0

    @property
    def enabled(self) -> bool:
        return self.max_tokens > 0

    def get(self, key: tuple) -> Optional[numpy.ndarray]:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: tuple, value: numpy.ndarray) -> None:
        if key in self._data or value.shape[1] > self.max_tokens:
            return
        self._data[key] = value
        self._tokens += value.shape[1]
        while self._tokens > self.max_tokens:
            _, old = self._data.popitem(last=False)
            self._tokens -= old.shape[1]

    def clear(self) -> None:
        self._data.clear()
        self._tokens = 0

    def __len__(self) -> int:
        return len(self._data)

    def __deepcopy__(self, memo) -> "_DocCache":
        return _DocCache(self.max_tokens)


__all__ = ["ElmoBiLM", "ElmoShim", "get_bilm", "set_bilm", "predict_layers"]
