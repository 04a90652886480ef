"""`spacy-elmo.ElmoBiLM.v1`: the biLM as a thinc Model over Docs.

    Model[List[Doc], List[Floats3d]]: per doc, every layer, (L+1, len(doc), width)

The architecture builds the shapes; weights come from elsewhere:

* `bilm` sizes given in the config: a biLM of those sizes with random
  weights, to be filled by a loader at `initialize` (or fine-tuned);
* no sizes: the model is empty until a loader fills it (`loaders.py`): the
  one named under `[initialize.components.elmo]`, else the one the
  component's `weights` setting picks (the component runs it before its
  first prediction; `initialize` runs it too), else the package's embedded
  English model. A pipeline loaded from disk carries its own copy.

The forward reads no file: a model that holds no biLM raises `ElmoNotReady`.

Frozen (the default, as in the paper) means predict only: no autograd, and
during training a doc's layers are computed once and reused in later epochs
(`doc_cache_bytes` bounds that cache). Not frozen: the biLM runs through
thinc's PyTorch wrapper (conversion, mixed precision, gradient scaling) and
the optimizer updates it.
"""
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple, cast

import numpy
import torch
from spacy.util import registry
from thinc.api import ArgsKwargs, Model
from thinc.layers.pytorchwrapper import forward as pytorch_forward
from thinc.types import ArrayXd, Floats3d
from thinc.util import torch2xp, xp2torch

from ..bilm.engine import backends
from ..bilm.config import BiLMConfig
from ..bilm.errors import SpacyElmoError
from ..bilm.model import BiLM, length_sorted_batches
from ..bilm.engine.weights_key import weights_key
from .. import defaults
from ..threads import spacy_worker_threads
from .config_value import setting
from .doc_cache import DocCache
from .loaders import LOADER_ATTR, ensure_weights
from .segments import SEGMENTATIONS, Segment, check_stride, doc_segments, segments_key
from .shim import ElmoShim

if TYPE_CHECKING:
    from spacy.tokens import Doc

InT = List[Any]  # List[Doc]; spaCy's Doc is not needed here
OutT = List[Floats3d]
_FINETUNE_BATCH_SENTENCES = 256


class ElmoNotReady(SpacyElmoError, ValueError):
    """The biLM cannot produce meaningful layers yet (no weights loaded, or random ones frozen)."""


@registry.architectures(defaults.ARCHITECTURE)
def ElmoBiLM(
    bilm: Optional[Dict[str, Any]] = None,
    max_window: int = defaults.MAX_WINDOW,
    max_length: int = defaults.MAX_LENGTH,
    segmentation: str = defaults.SEGMENTATION,
    skip_whitespace: bool = defaults.SKIP_WHITESPACE,
    batch_tokens: int = defaults.BATCH_TOKENS,
    token_cache_size: int = defaults.TOKEN_CACHE_SIZE,
    doc_cache_bytes: int = defaults.DOC_CACHE_BYTES,
    mixed_precision: bool = defaults.MIXED_PRECISION,
    backend: str = defaults.BACKEND,
    seed: int = defaults.SEED,
    stride: int = defaults.STRIDE,
) -> Model[InT, OutT]:
    """The biLM over Docs; see the module docstring.

    bilm: explicit sizes (any `BiLMConfig` field, e.g. lstm_dim, projection_dim,
        n_layers, filters) for a biLM with random weights.
    max_window: most tokens of one window, for docs without sentence boundaries
        (never more than max_length).
    max_length: most tokens read from one zero state; longer sentences are cut.
    segmentation: "auto" (sentences when the doc has them, else windows),
        "sents" or "windows".
    token_cache_size: context-free token vectors kept across batches at
        inference (0: off).
    doc_cache_bytes: bytes of layers a frozen biLM keeps between epochs
        during training (0: off).
    mixed_precision: run the biLM under autocast on CUDA (bfloat16 for
        prediction where the card has it, float16 with gradient scaling for
        fine-tuning); the layers come back as float32. No effect on CPU.
    backend: how the biLM computes: "auto" (the best exact backend available
        on the machine that runs it), "reference", "mkl", "onednn",
        "onednn+kernel", or "int8" (opt-in: int8 products, approximate and
        batch-dependent; never chosen by "auto") (`spacy-elmo info` lists
        them; docs/internals.md).
    seed: the random weights' seed where `bilm` gives sizes.
    stride: a sentence longer than max_length is read in windows of
        max_length tokens starting every `stride` tokens, each token taking
        its vectors from the window where it is most central, so that no
        token loses its context at a cut; stride = max_length: consecutive
        pieces without overlap. 1 <= stride <= max_length.
    """
    if segmentation not in SEGMENTATIONS:
        raise ValueError(f"ElmoBiLM: segmentation must be one of {SEGMENTATIONS}, got {segmentation!r}")
    if max_window < 1 or max_length < 1 or batch_tokens < 1:
        raise ValueError("ElmoBiLM: max_window, max_length and batch_tokens must be >= 1")
    if token_cache_size < 0:
        raise ValueError(f"ElmoBiLM: token_cache_size must be >= 0 (0: no cache), got {token_cache_size}")
    try:
        check_stride(stride, max_length)
    except ValueError as err:
        raise ValueError(f"ElmoBiLM: {err}") from None
    try:
        backends.check(backend)
    except backends.BackendError as err:
        raise ValueError(f"ElmoBiLM: {err}") from None
    fresh = None
    if bilm:
        settings = dict(bilm)
        if "filters" in settings:
            settings["filters"] = tuple(tuple(f) for f in settings["filters"])
        fresh = BiLM(BiLMConfig(**settings), backend=backend)
        fresh.reset_parameters(seed)
    torch_layer: Model = Model(
        "elmo-torch",
        pytorch_forward,
        attrs={"convert_inputs": _convert_inputs, "convert_outputs": _convert_outputs},
        # thinc's autocast and gradient scaler are for CUDA: on when the model is built for the GPU (thinc's
        # current ops are cupy's, as after require_gpu, which also puts the shim there); a machine with
        # CUDA running on its CPU keeps float32 (the scaler refused its CPU gradients)
        shims=[ElmoShim(fresh, mixed_precision=mixed_precision and _building_for_gpu())],
    )
    model: Model[InT, OutT] = Model(
        "elmo-bilm",
        forward,
        init=init,
        layers=[torch_layer],
        dims={"nO": fresh.width if fresh else None, "nL": fresh.n_layers if fresh else None},
        attrs={
            "max_window": max_window,
            "max_length": max_length,
            "stride": stride,
            "segmentation": segmentation,
            "skip_whitespace": skip_whitespace,
            "batch_tokens": batch_tokens,
            "token_cache_size": token_cache_size,
            "doc_cache": DocCache(doc_cache_bytes),
            "mixed_precision": mixed_precision,
            "backend": backend,
            "frozen": True,
            LOADER_ATTR: None,  # set by the component from its `weights`; None: the embedded model
            "fresh": fresh is not None,
        },
    )
    return model


def _building_for_gpu() -> bool:
    """Whether a model built now runs on the GPU: thinc's current ops are cupy's (`require_gpu`, `spacy
    train --gpu-id`), which is also what puts the shim's biLM there (thinc's default torch device)."""
    from thinc.api import CupyOps, get_current_ops

    return isinstance(get_current_ops(), CupyOps) and torch.cuda.is_available()


def init(model: Model[InT, OutT], X: Optional[InT] = None, Y: Optional[OutT] = None) -> Model[InT, OutT]:
    """At `initialize`: fill the model through its loader unless it holds a biLM already."""
    ensure_weights(model)
    get_bilm(model)
    return model


def model_shim(model: Model) -> ElmoShim:
    """The shim holding the model's torch biLM (one per model: what per-model state is keyed by)."""
    return cast(ElmoShim, model.layers[0].shims[0])


def has_bilm(model: Model) -> bool:
    """Whether the model holds a biLM already (built from sizes, loaded or deserialized)."""
    return model_shim(model).bilm is not None


def set_bilm(model: Model, bilm: BiLM) -> None:
    """Install a biLM (e.g. from a loader at initialize) into the model."""
    model_shim(model).set_bilm(bilm)
    model.attrs["fresh"] = False
    forget_layers(model)
    _configure(model, bilm)


def forget_layers(model: Model) -> None:
    """Empty the model's doc cache (after its biLM was replaced: set_bilm, from_bytes, from_disk), so that
    neither the old layers nor the old weights stay in memory until the next training batch."""
    cache = model.attrs.get("doc_cache")
    if cache is not None:
        cache.clear()


def drop_bilm(model: Model) -> None:
    """Empty the model (e.g. a biLM of random weights that the component's weights replace)."""
    model_shim(model)._model = None
    model.attrs["fresh"] = False
    for name in ("nO", "nL"):
        model.set_dim(name, None, force=True)  # type: ignore[arg-type]


def get_bilm(model: Model) -> BiLM:
    """The torch BiLM the model holds, set up with the model's settings; ElmoNotReady if it holds none."""
    bilm = model_shim(model).bilm
    if bilm is None:
        raise ElmoNotReady(
            f"'{model.name}': no biLM weights are loaded. The elmo component loads its own before its first "
            "prediction and at nlp.initialize(); a biLM model used on its own needs a loader first "
            "(spacy_elmo.layers.loaders: e.g. resolve_loader(weights)(model), or model.initialize())."
        )
    if model.maybe_get_dim("nO") != bilm.width or model.maybe_get_dim("nL") != bilm.n_layers:
        _configure(model, bilm)
    _apply_backend(model, bilm)
    return bilm


def check_ready(model: Model, name: str) -> None:
    """Refuse to run a frozen biLM that only has random weights."""
    if model.attrs.get("fresh") and model.attrs.get("frozen"):
        raise ElmoNotReady(
            f"'{name}': the biLM was built from explicit sizes with random weights and frozen = true, "
            "so its layers would be noise. Give it weights (a loader under "
            f"[initialize.components.{name}], or the component's 'weights' setting), "
            "or set frozen = false to train it."
        )


def _configure(model: Model, bilm: BiLM) -> None:
    model.set_dim("nO", bilm.width, force=True)
    model.set_dim("nL", bilm.n_layers, force=True)
    _apply_backend(model, bilm)
    _set_token_cache(model, bilm)


def _apply_backend(model: Model, bilm: BiLM) -> None:
    """A loaded, deserialized or installed biLM takes the architecture's backend setting."""
    backend = setting(model, "backend", "auto")
    if bilm.backend != backend:
        bilm.backend = backend


def _set_token_cache(model: Model, bilm: BiLM) -> None:
    size = setting(model, "token_cache_size")
    if size and model.attrs["frozen"] and bilm.token_cache is None:
        bilm.enable_cache(size)
    elif (not size or not model.attrs["frozen"]) and bilm.token_cache is not None:
        bilm.disable_cache()


def forward(model: Model[InT, OutT], docs: InT, is_train: bool) -> Tuple[OutT, Callable]:
    check_ready(model, model.name)
    bilm = get_bilm(model)
    _set_token_cache(model, bilm)
    if not is_train or model.attrs["frozen"]:
        spacy_worker_threads()  # a standalone model in nlp.pipe's worker runs the biLM without the component
        outputs = predict_layers(model, bilm, docs, use_doc_cache=is_train)
        return [model.ops.asarray3f(cast(Floats3d, o)) for o in outputs], _no_backprop
    return _forward_finetune(model, bilm, docs)


def _no_backprop(d_outputs: OutT) -> InT:
    return []


def _segments(model: Model, doc: "Doc") -> List[Segment]:
    max_length = setting(model, "max_length")
    return doc_segments(
        doc,
        setting(model, "max_window"),
        setting(model, "segmentation"),
        setting(model, "skip_whitespace"),
        max_length,
        setting(model, "stride", max_length),
    )


def predict_layers(model: Model, bilm: BiLM, docs: InT, use_doc_cache: bool = False) -> List[numpy.ndarray]:
    """(L+1, len(doc), width) float32 numpy arrays, no autograd."""
    n_layers, width = bilm.n_layers, bilm.width
    outputs: List[Optional[numpy.ndarray]] = [None] * len(docs)
    cache: DocCache = model.attrs["doc_cache"]
    precision = _precision(model, bilm)
    if cache.enabled:
        current = weights_key(bilm, precision, bilm.backend, bilm.cache_generation)
        if use_doc_cache:
            cache.bind(current)
        else:  # a replaced biLM's layers and weights are let go at its successor's first prediction
            cache.forget_unless(current)
    jobs: List[Tuple[int, Segment]] = []  # (doc position, segment)
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
            sentences.append([doc[i].text for i in segment.indices])
    if sentences:
        batches = bilm.embed_batches(sentences, batch_tokens=setting(model, "batch_tokens"), precision=precision)
        for positions, arrays in batches:
            for p, array in zip(positions, arrays):
                d, segment = jobs[p]
                a, b = segment.keep
                outputs[d][:, segment.kept] = array[:, a:b]  # type: ignore[index]
    for d, key in keys.items():
        cache.put(key, outputs[d])  # type: ignore[arg-type]
    return outputs  # type: ignore[return-value]


def _precision(model: Model, bilm: BiLM) -> str:
    """bfloat16 autocast (float16 where bf16 is unsupported) with mixed_precision on CUDA."""
    if not setting(model, "mixed_precision", False) or bilm.device.type != "cuda":
        return "float32"
    return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"


def _forward_finetune(model: Model, bilm: BiLM, docs: InT) -> Tuple[OutT, Callable]:
    """Layers with gradients into the biLM (frozen = false), through thinc's PyTorch wrapper."""
    jobs: List[Tuple[int, Segment]] = []
    sentences: List[List[str]] = []
    for d, doc in enumerate(docs):
        for segment in _segments(model, doc):
            jobs.append((d, segment))
            sentences.append([doc[i].text for i in segment.indices])
    if not sentences:
        return [model.ops.alloc3f(bilm.n_layers, len(doc), bilm.width) for doc in docs], _no_backprop
    lengths = [len(s) for s in sentences]
    order = list(length_sorted_batches(lengths, setting(model, "batch_tokens"), _FINETUNE_BATCH_SENTENCES))
    batches = [[sentences[j] for j in batch] for batch in order]
    per_batch, backprop_torch = model.layers[0](batches, is_train=True)
    ops = model.ops
    outputs = [ops.alloc3f(bilm.n_layers, len(doc), bilm.width) for doc in docs]
    for batch, arrays in zip(order, per_batch):
        for j, array in zip(batch, arrays):
            d, segment = jobs[j]
            a, b = segment.keep
            outputs[d][:, segment.kept] = array[:, a:b]

    def backprop(d_outputs: OutT) -> InT:
        d_batches = []
        for batch in order:
            d_batch = []
            for j in batch:
                d, segment = jobs[j]
                a, b = segment.keep
                if (a, b) == (0, len(segment.indices)):
                    d_batch.append(ops.xp.ascontiguousarray(d_outputs[d][:, segment.indices]))
                    continue
                d_segment = ops.alloc3f(bilm.n_layers, len(segment.indices), bilm.width)
                d_segment[:, a:b] = d_outputs[d][:, segment.kept]  # positions another window gives: no gradient
                d_batch.append(d_segment)
            d_batches.append(d_batch)
        backprop_torch(d_batches)
        return []

    return outputs, backprop


def _convert_inputs(model: Model, batches: List[List[List[str]]], is_train: bool) -> Tuple[ArgsKwargs, Callable]:
    return ArgsKwargs(args=(batches,), kwargs={}), lambda d_inputs: []


def _convert_outputs(
    model: Model, inputs_outputs: Tuple[Any, List[List[torch.Tensor]]], is_train: bool
) -> Tuple[List[List[ArrayXd]], Callable[[List[List[Floats3d]]], ArgsKwargs]]:
    """Per batch, per segment: torch layers -> xp arrays; gradients back to torch."""
    _, torch_outputs = inputs_outputs
    arrays = [[torch2xp(t.detach()) for t in batch] for batch in torch_outputs]
    flat = [t for batch in torch_outputs for t in batch]

    def get_d_torch(d_arrays: List[List[Floats3d]]) -> ArgsKwargs:
        d_flat = [d for batch in d_arrays for d in batch]
        grads = [xp2torch(d, device=t.device) for d, t in zip(d_flat, flat)]
        return ArgsKwargs(args=(flat,), kwargs={"grad_tensors": grads})

    return arrays, get_d_torch


__all__ = ["ElmoBiLM", "ElmoNotReady", "check_ready", "drop_bilm", "forget_layers", "get_bilm", "has_bilm", "set_bilm",
           "predict_layers"]
