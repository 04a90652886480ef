"""The `elmo` pipeline component.

    nlp.add_pipe("elmo")                                  # the embedded English biLM
    nlp.add_pipe("elmo", config={"weights": "path/to/dir"})  # published or native weights

It runs the biLM over the docs (per sentence, or per window where a doc has no
sentence boundaries), stores every layer on the doc (`doc._.elmo`), and feeds
downstream components through `spacy-elmo.ElmoListener.v1` listeners, each
with its own learned mix of the layers.
"""
import os
from itertools import islice
from typing import Callable, Dict, Iterable, List, Optional, Sequence

import numpy
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples, validate_get_examples
from spacy.vocab import Vocab
from thinc.api import Config, Model, Optimizer, set_dropout_rate

from ..layers.bilm_model import get_bilm, set_bilm
from ..layers.listener import ElmoListenerLayer
from ..threads import ThreadsSetting, check_threads, cpu_threads
from .extensions import set_doc_layers, set_doc_mix, set_vector_hooks

DEFAULT_MODEL_CONFIG = """
[model]
@architectures = "spacy-elmo.ElmoBiLM.v1"
max_window = 64
segmentation = "auto"
skip_whitespace = true
batch_tokens = 4096
token_cache_size = 50000
doc_cache_tokens = 2000000
mixed_precision = false
"""
DEFAULT_MODEL = Config().from_str(DEFAULT_MODEL_CONFIG)["model"]


_PARENT_PID = os.getpid()


def _single_thread_in_worker() -> None:
    """In a process forked by nlp.pipe(n_process=N), use one torch thread.

    The workers share the machine's cores, and OpenMP's thread pool does not
    survive fork: without this, the first parallel region in a worker can hang.
    """
    global _PARENT_PID
    if os.getpid() != _PARENT_PID:
        import torch

        torch.set_num_threads(1)
        _PARENT_PID = os.getpid()


class ElmoNotReady(ValueError):
    """The component cannot produce meaningful layers yet."""


@Language.factory(
    "elmo",
    default_config={
        "model": DEFAULT_MODEL,
        "weights": None,
        "frozen": True,
        "store_layers": True,
        "mix": None,
        "gamma": 1.0,
        "set_vector_hooks": False,
        "threads": "auto",
    },
    assigns=["doc._.elmo", "doc._.elmo_vector"],
    default_score_weights={},
)
def make_elmo(
    nlp: Language,
    name: str,
    model: Model,
    weights: Optional[str],
    frozen: bool,
    store_layers: bool,
    mix: Optional[List[float]],
    gamma: float,
    set_vector_hooks: bool,
    threads: ThreadsSetting,
) -> "Elmo":
    """Create the component.

    weights: a directory in the published (options.json + weights.hdf5) or
        native format; null: the package's embedded English biLM, unless the
        model config gives explicit sizes. Loaded on first use; a pipeline
        saved to disk carries its own copy.
    frozen: keep the biLM fixed (the paper's setting); false fine-tunes it
        through the listeners' gradients.
    store_layers: keep doc._.elmo in doc.user_data (serialized with the doc).
    mix, gamma: the layer weights (before normalisation) and scale of
        *._.elmo_vector; uniform and 1.0 by default.
    set_vector_hooks: make doc/span/token .vector and .similarity use ELMo.
    threads: CPU threads for prediction: "auto" (the cores other processes
        leave free), 0 (torch's setting) or N (see spacy_elmo/threads.py).
    """
    return Elmo(
        nlp.vocab,
        model,
        name,
        weights=weights,
        frozen=frozen,
        store_layers=store_layers,
        mix=mix,
        gamma=gamma,
        set_vector_hooks=set_vector_hooks,
        threads=threads,
    )


class Elmo(TrainablePipe):
    """Contextual layers from a biLM, stored on docs and shared with listeners."""

    def __init__(
        self,
        vocab: Vocab,
        model: Model,
        name: str = "elmo",
        *,
        weights: Optional[str] = None,
        frozen: bool = True,
        store_layers: bool = True,
        mix: Optional[Sequence[float]] = None,
        gamma: float = 1.0,
        set_vector_hooks: bool = False,
        threads: ThreadsSetting = "auto",
    ) -> None:
        self.vocab = vocab
        self.model = model
        self.name = name
        self.listener_map: Dict[str, List[Model]] = {}
        self.cfg = {
            "weights": str(weights) if weights is not None else None,
            "frozen": bool(frozen),
            "store_layers": bool(store_layers),
            "mix": list(mix) if mix is not None else None,
            "gamma": float(gamma),
            "set_vector_hooks": bool(set_vector_hooks),
            "threads": check_threads(threads),
        }
        if weights is not None:
            model.attrs["weights"] = str(weights)
            if model.attrs.get("fresh"):
                # explicit weights win over sizes in the model block: load them on first use
                model.shims[0]._model = None
                model.attrs["fresh"] = False
        model.attrs["frozen"] = bool(frozen)

    # -- listeners ----------------------------------------------------------------
    @property
    def listeners(self) -> List[Model]:
        return [m for c in self.listening_components for m in self.listener_map[c]]

    @property
    def listening_components(self) -> List[str]:
        return list(self.listener_map.keys())

    def add_listener(self, listener: ElmoListenerLayer, component_name: str) -> None:
        self.listener_map.setdefault(component_name, [])
        if listener not in self.listener_map[component_name]:
            self.listener_map[component_name].append(listener)
        listener.link(self)

    def remove_listener(self, listener: ElmoListenerLayer, component_name: str) -> bool:
        if component_name in self.listener_map and listener in self.listener_map[component_name]:
            self.listener_map[component_name].remove(listener)
            if not self.listener_map[component_name]:
                del self.listener_map[component_name]
            return True
        return False

    def find_listeners(self, component) -> None:
        """Register the ElmoListener layers of a downstream component that listen to us."""
        names = ("*", self.name)
        if isinstance(getattr(component, "model", None), Model):
            for node in component.model.walk():
                if isinstance(node, ElmoListenerLayer) and node.upstream_name in names:
                    self.add_listener(node, component.name)

    # -- the biLM -----------------------------------------------------------------
    @property
    def frozen(self) -> bool:
        return self.cfg["frozen"]

    @property
    def bilm(self):
        """The torch BiLM (loaded on first access)."""
        return get_bilm(self.model)

    def _check_ready(self) -> None:
        if self.model.attrs.get("fresh") and self.frozen:
            raise ElmoNotReady(
                f"'{self.name}': the biLM was built from explicit sizes with random weights and frozen = true, "
                "so its layers would be noise. Give it weights (the component's 'weights' setting, or "
                f"[initialize.components.{self.name}] weights = PATH), or set frozen = false to train it."
            )

    def _mix(self, n_layers: int) -> numpy.ndarray:
        mix = self.cfg["mix"]
        if mix is None:
            return numpy.full(n_layers, 1.0 / n_layers, dtype=numpy.float32)
        if len(mix) != n_layers:
            raise ValueError(f"'{self.name}': mix has {len(mix)} weights but the biLM has {n_layers} layers")
        logits = numpy.asarray(mix, dtype=numpy.float64)
        weights = numpy.exp(logits - logits.max())
        return (weights / weights.sum()).astype(numpy.float32)

    # -- prediction -----------------------------------------------------------------
    def predict(self, docs: Iterable[Doc]) -> List[numpy.ndarray]:
        """Every layer of every doc: (L+1, len(doc), width) float32 arrays."""
        self._check_ready()
        _single_thread_in_worker()
        docs = list(docs)
        with cpu_threads(self.cfg.get("threads", "auto")):
            outputs = self.model.predict(docs)
        return [self.model.ops.to_numpy(o).astype(numpy.float32, copy=False) for o in outputs]

    def set_annotations(self, docs: Sequence[Doc], layers: Sequence[numpy.ndarray]) -> None:
        store = self.cfg["store_layers"]
        for doc, doc_layers in zip(docs, layers):
            doc_layers = self.model.ops.to_numpy(doc_layers).astype(numpy.float32, copy=False)
            set_doc_layers(doc, doc_layers, store=store)
            set_doc_mix(doc, self._mix(doc_layers.shape[0]), self.cfg["gamma"])
            if self.cfg["set_vector_hooks"]:
                set_vector_hooks(doc)

    # -- training -------------------------------------------------------------------
    def update(
        self,
        examples: Iterable[Example],
        *,
        drop: float = 0.0,
        sgd: Optional[Optimizer] = None,
        losses: Optional[Dict[str, float]] = None,
    ) -> Dict[str, float]:
        """Compute the layers once for the batch and hand them to every listener.

        Frozen: the layers of a doc are reused across epochs and no gradient
        reaches the biLM. Fine-tuning: the listeners' gradients are summed and
        backpropagated into the biLM, then the optimizer updates it.
        """
        if losses is None:
            losses = {}
        validate_examples(examples, "Elmo.update")
        self._check_ready()
        docs = [eg.predicted for eg in examples]
        losses.setdefault(self.name, 0.0)
        if not docs or not self.listeners:
            return losses
        set_dropout_rate(self.model, drop)
        layers, bp_layers = self.model.begin_update(docs)
        d_layers = [self.model.ops.alloc3f(*x.shape) for x in layers]

        def accumulate_gradient(one_d_layers):
            for i in range(len(one_d_layers)):
                d_layers[i] += one_d_layers[i]
                losses[self.name] += float((one_d_layers[i] ** 2).sum())
            return [self.model.ops.alloc3f(*x.shape) for x in layers]

        def backprop(one_d_layers):
            accumulate_gradient(one_d_layers)
            d_docs = bp_layers(d_layers)
            if sgd is not None and not self.frozen:
                self.finish_update(sgd)
            return d_docs

        batch_id = ElmoListenerLayer.get_batch_id(docs)
        for listener in self.listeners[:-1]:
            listener.receive(batch_id, layers, accumulate_gradient)
        self.listeners[-1].receive(batch_id, layers, backprop)
        return losses

    def finish_update(self, sgd: Optimizer) -> None:
        """Update the biLM, unless it is frozen (then its weights never change)."""
        if not self.frozen:
            super().finish_update(sgd)
            self.model.attrs["fresh"] = False  # trained now: no longer random weights

    def get_loss(self, examples, scores) -> None:
        pass

    def initialize(
        self,
        get_examples: Callable[[], Iterable[Example]],
        *,
        nlp: Optional[Language] = None,
        weights: Optional[str] = None,
    ) -> None:
        """Load weights if given ([initialize.components.elmo] weights = PATH) and check the setup."""
        validate_get_examples(get_examples, "Elmo.initialize")
        if weights is not None:
            from ..io import load_bilm

            set_bilm(self.model, load_bilm(weights))
            self.cfg["weights"] = str(weights)
        self._check_ready()
        docs = [eg.predicted for eg in islice(get_examples(), 10)]
        self.model.initialize(X=docs)
        for listener in self.listeners:
            listener.link(self)

    def to_bytes(self, *, exclude=tuple()) -> bytes:
        get_bilm(self.model)  # a pipeline saved before first use still carries its weights
        return super().to_bytes(exclude=exclude)

    def to_disk(self, path, *, exclude=tuple()) -> None:
        get_bilm(self.model)
        super().to_disk(path, exclude=exclude)

    def add_label(self, label: str) -> int:
        raise NotImplementedError(f"'{self.name}' has no labels")

    def __repr__(self) -> str:
        return f"<Elmo '{self.name}' frozen={self.frozen} weights={self.cfg['weights'] or 'default'}>"


__all__ = ["Elmo", "make_elmo", "ElmoNotReady", "DEFAULT_MODEL_CONFIG"]
