"""The `elmo` pipeline component.

    nlp.add_pipe("elmo")                                  # the embedded English biLM
    nlp.add_pipe("elmo", config={"weights": "path/to/dir"})  # published or native weights

It runs the biLM over the docs (per sentence, or per window where a doc has no
sentence boundaries), stores every layer on the doc (`doc._.elmo`; in float16,
or only the mixed vectors, for users who keep many docs: `store`,
`store_dtype`), optionally the mix as `doc.tensor`, and feeds downstream
components through `spacy-elmo.ElmoListener.v1` listeners, each with its own
learned mix of the layers.

Weights arrive only through registered loaders (layers/loaders.py): the one
named at `initialize` (`[initialize.components.elmo] loader`), else the one
the `weights` setting picks (`resolve_loader`: null is the embedded model).
The component runs its loader when it first needs the biLM (the first
prediction or update, `initialize`, saving), not when it is created, so
`nlp.add_pipe("elmo"); nlp(text)` works without `initialize`, and a pipeline
that `spacy.load` restores, whose biLM comes from its own files, never reads
the weights its config names.
"""
import warnings
import weakref
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy
import srsly
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples, validate_get_examples
from spacy.vocab import Vocab
from thinc.api import Config, Model, Optimizer, set_dropout_rate
from thinc.types import Floats3d

from .. import defaults
from ..bilm.model import BiLM
from ..io import WeightsError
from ..layers.shim import SOURCE as SHIM_SOURCE
from ..layers.bilm_model import ElmoNotReady, check_ready, drop_bilm, forget_layers, get_bilm
from ..layers.listener import ElmoListenerLayer
from ..layers.loaders import LOADER_ATTR, ensure_weights, resolve_loader
from ..layers.config_value import ConfigValue, setting
from ..layers.standalone import LISTENER, STANDALONE, replace_listener, replace_listener_cfg
from ..threads import ThreadsSetting, check_threads, cpu_threads, in_spacy_pipe_worker, spacy_worker_threads
from .extensions import mix_layers, register_extensions, set_doc_layers, set_doc_mix, set_doc_mixed, set_vector_hooks

DEFAULT_MODEL = Config({"model": {"@architectures": defaults.ARCHITECTURE, **defaults.model_settings()}})["model"]
DEFAULT_MODEL_CONFIG = Config({"model": DEFAULT_MODEL}).to_str()
STORE = ("layers", "mix")
# cfg key: the `weights` setting naming what an [initialize] loader filled the biLM with (None: the embedded model)
FILLED_FROM = "initialized_from"
STORE_DTYPES = ("float32", "float16")

# the pipelines that built an elmo component (make_elmo), for `misplaced_upstream`'s error message
_PIPELINES: "weakref.WeakSet[Language]" = weakref.WeakSet()
_PENDING: "weakref.WeakKeyDictionary[Elmo, PendingBackward]" = weakref.WeakKeyDictionary()


_HOOKS_WARNED = {"done": False}


def _warn_hooks_in_worker() -> None:
    """Vector hooks are functions: they do not travel back from a worker process."""
    if _HOOKS_WARNED["done"] or not in_spacy_pipe_worker():
        return
    _HOOKS_WARNED["done"] = True
    warnings.warn(
        "elmo: set_vector_hooks in a worker process (nlp.pipe with n_process > 1): spaCy sends docs back "
        "with Doc.to_bytes, which drops user hooks, so doc.vector and .similarity will not use ELMo in the "
        "parent. Call spacy_elmo.pipeline.set_vector_hooks(doc) on each doc you receive "
        "(the layers come back with store_layers = true).",
        UserWarning,
        stacklevel=2,
    )


@Language.factory(
    "elmo",
    default_config={
        "model": DEFAULT_MODEL,
        "weights": None,
        "frozen": True,
        "store_layers": True,
        "store": "layers",
        "store_dtype": "float32",
        "set_doc_tensor": False,
        "mix": None,
        "gamma": 1.0,
        "set_vector_hooks": False,
        "threads": defaults.THREADS,
    },
    assigns=["doc._.elmo", "doc._.elmo_vector", "doc.tensor"],
    default_score_weights={},
)
def make_elmo(
    nlp: Language,
    name: str,
    model: Model,
    weights: Optional[str],
    frozen: bool,
    store_layers: bool,
    store: str,
    store_dtype: str,
    set_doc_tensor: bool,
    mix: Optional[List[float]],
    gamma: float,
    set_vector_hooks: bool,
    threads: ThreadsSetting,
) -> "Elmo":
    """Create the component.

    weights: the model to load: a directory of any supported layout, an
        archive, a URL or a catalogue name (`spacy-elmo.SourceLoader.v1`);
        null: the package's embedded English biLM. Read when the component
        first needs the biLM, unless a loader filled it at initialize. A
        pipeline saved to disk carries its own copy and never reads it.
    frozen: predict only: the biLM is fixed and computes no gradients (the
        paper's setting); false fine-tunes it through the listeners' gradients.
    store_layers: keep what `store` names in doc.user_data (serialized with
        the doc); false: outside it, for as long as the Doc object lives.
    store: what a doc keeps: "layers" (doc._.elmo, every layer) or "mix"
        (only the mixed vectors that *._.elmo_vector read; *._.elmo are
        None), for users who keep many docs. Listeners need the layers.
    store_dtype: "float32" or "float16" (half the memory) for what is kept;
        *._.elmo_vector are float32 either way.
    set_doc_tensor: also set doc.tensor to the (len(doc), width) float32 mix.
    mix, gamma: the layer weights (before normalisation) and scale of
        *._.elmo_vector; uniform and 1.0 by default.
    set_vector_hooks: make doc/span/token .vector and .similarity use ELMo.
    threads: CPU threads for prediction: 0 (torch's own setting), N, or
        "load-aware" (the cores other processes leave free, from /proc/stat;
        "auto" is its deprecated name). See spacy_elmo/threads.py.
    """
    _PIPELINES.add(nlp)
    return Elmo(
        nlp.vocab,
        model,
        name,
        weights=weights,
        frozen=frozen,
        store_layers=store_layers,
        store=store,
        store_dtype=store_dtype,
        set_doc_tensor=set_doc_tensor,
        mix=mix,
        gamma=gamma,
        set_vector_hooks=set_vector_hooks,
        threads=threads,
    )


def check_store(store: str, store_dtype: str) -> Tuple[str, str]:
    """The `store` and `store_dtype` settings, checked (a typo is an error, not a silent default)."""
    if store not in STORE:
        raise ValueError(f"elmo: store must be one of {STORE}, got {store!r}")
    if store_dtype not in STORE_DTYPES:
        raise ValueError(f"elmo: store_dtype must be one of {STORE_DTYPES}, got {store_dtype!r}")
    return store, store_dtype


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
        store: str = "layers",
        store_dtype: str = "float32",
        set_doc_tensor: bool = False,
        mix: Optional[Sequence[float]] = None,
        gamma: float = 1.0,
        set_vector_hooks: bool = False,
        threads: ThreadsSetting = defaults.THREADS,
    ) -> None:
        register_extensions()
        self.vocab = vocab
        self.model = model
        self.name = name
        self.listener_map: Dict[str, List[ElmoListenerLayer]] = {}
        self.cfg: Dict[str, Any] = {
            "weights": str(weights) if weights is not None else None,
            "frozen": bool(frozen),
            "store_layers": bool(store_layers),
            "store": check_store(store, store_dtype)[0],
            "store_dtype": store_dtype,
            "set_doc_tensor": bool(set_doc_tensor),
            "mix": list(mix) if mix is not None else None,
            "gamma": float(gamma),
            "set_vector_hooks": bool(set_vector_hooks),
            "threads": check_threads(threads),
        }
        model.attrs[LOADER_ATTR] = resolve_loader(weights)  # nothing is read until it runs
        if weights is not None and model.attrs.get("fresh"):
            drop_bilm(model)  # explicit weights win over sizes in the model block: loaded on first use
        # what spaCy's replace_listeners looks for (see layers/standalone.py)
        model.attrs["replace_listener"] = _replace_listener
        self.frozen = bool(frozen)

    @property
    def _pending(self) -> Optional["PendingBackward"]:
        """A fine-tuning batch some listener has not reported for (see `_flush_pending`).

        Kept outside the component's __dict__: it holds closures and an
        autograd graph, and spaCy's pickling of a component (Cython's
        reduce, which ignores __getstate__) takes the whole __dict__.
        """
        return _PENDING.get(self)

    @_pending.setter
    def _pending(self, value: Optional["PendingBackward"]) -> None:
        if value is None:
            _PENDING.pop(self, None)
        else:
            _PENDING[self] = value

    # -- listeners ----------------------------------------------------------------
    @property
    def listeners(self) -> List[ElmoListenerLayer]:
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
            # a new list, not the old one changed in place: spaCy's replace_listeners iterates
            # over the old one while it removes, and would skip a component's second listener
            remaining = [other for other in self.listener_map[component_name] if other is not listener]
            if remaining:
                self.listener_map[component_name] = remaining
            else:
                del self.listener_map[component_name]
            return True
        return False

    def find_listeners(self, component: Any) -> None:
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

    @frozen.setter
    def frozen(self, value: bool) -> None:
        """Freeze or unfreeze the biLM (e.g. to fine-tune a pipeline trained frozen): the setting,
        the model's attr its forward pass reads, and the standalone config replace_listeners writes.

        A pipeline saved afterwards is loaded with its config's setting: set
        `nlp.get_pipe_config(name)["frozen"]` too (as scripts/finetune.py does)."""
        self.cfg["frozen"] = bool(value)
        self.model.attrs["frozen"] = bool(value)
        self._pending = None  # a frozen biLM takes no gradient
        self._set_replace_listener_cfg()

    def _set_replace_listener_cfg(self) -> None:
        """What `replace_listeners` writes in a listener's place: a standalone block with this
        component's `frozen` setting and the weights its biLM came from (its `weights`, or the
        model its [initialize] loader read), so that the block builds the same biLM on its own."""
        if FILLED_FROM in self.cfg:  # an [initialize] loader filled it (in this process or the saved one's)
            weights = self.cfg[FILLED_FROM]
        else:
            weights = getattr(self.model.attrs.get(LOADER_ATTR), "weights", self.cfg["weights"])
        self.model.attrs["replace_listener_cfg"] = partial(
            replace_listener_cfg, frozen=self.cfg["frozen"], weights=weights
        )

    @property
    def is_trainable(self) -> bool:
        """False while frozen: spaCy then neither applies the optimizer nor logs a loss for it.

        `nlp.update` still calls `update`, which feeds the listeners.
        """
        return not self.frozen

    @property
    def bilm(self) -> BiLM:
        """The torch BiLM (its loader runs on first access)."""
        return get_bilm(ensure_weights(self.model))

    def _check_ready(self) -> None:
        """Load the weights if nothing has yet, and refuse a frozen biLM of random weights."""
        ensure_weights(self.model)
        check_ready(self.model, self.name)

    def _mix(self, n_layers: int) -> numpy.ndarray:
        """The softmax of the `mix` setting (uniform when unset), as float32 layer weights.

        Extreme logits (e.g. [1e308, -1e308, 0]) overflow to -inf when the max is
        subtracted; exp(-inf) is the right weight, 0, so numpy's warning is silenced.
        """
        mix = self.cfg["mix"]
        if mix is None:
            return numpy.full(n_layers, 1.0 / n_layers, dtype=numpy.float32)
        if len(mix) != n_layers:
            raise ValueError(f"'{self.name}': mix has {len(mix)} weights but the biLM has {n_layers} layers")
        logits = numpy.asarray(mix, dtype=numpy.float64)
        with numpy.errstate(over="ignore"):
            weights = numpy.exp(logits - logits.max())
        return (weights / weights.sum()).astype(numpy.float32)

    # -- prediction -----------------------------------------------------------------
    def predict(self, docs: Iterable[Doc]) -> List[numpy.ndarray]:
        """Every layer of every doc: (L+1, len(doc), width) float32 arrays."""
        self._check_ready()
        docs = list(docs)
        with cpu_threads(spacy_worker_threads(self.cfg.get("threads", defaults.THREADS))):
            outputs = self.model.predict(docs)
        return [self.model.ops.to_numpy(o).astype(numpy.float32, copy=False) for o in outputs]

    def set_annotations(self, docs: Sequence[Doc], layers: Sequence[numpy.ndarray]) -> None:
        """Keep the layers (or only their mix) on each doc, as `store` and `store_dtype` say.

        The mix is computed from the float32 layers, before any rounding to
        float16; `doc.tensor` (with `set_doc_tensor`) is that float32 mix.
        """
        store, dtype = check_store(self.cfg.get("store", "layers"), self.cfg.get("store_dtype", "float32"))
        persist = self.cfg["store_layers"]
        gamma = self.cfg["gamma"]
        set_tensor = self.cfg.get("set_doc_tensor", False)
        if store == "mix":
            self._check_listeners_get_layers()
        if self.cfg["set_vector_hooks"]:
            _warn_hooks_in_worker()
        for doc, doc_layers in zip(docs, layers):
            doc_layers = self.model.ops.to_numpy(doc_layers).astype(numpy.float32, copy=False)
            weights = self._mix(doc_layers.shape[0])
            set_doc_mix(doc, weights, gamma)
            mixed = mix_layers(doc_layers, weights, gamma) if store == "mix" or set_tensor else None
            if store == "layers":
                set_doc_layers(doc, doc_layers.astype(dtype, copy=False), store=persist, source=self.name)
            else:
                assert mixed is not None
                # a float32 mix: the same array
                set_doc_mixed(doc, mixed.astype(dtype, copy=False), store=persist, source=self.name)
            if mixed is not None and set_tensor:
                doc.tensor = mixed  # type: ignore[assignment]  # spaCy types it as float64
            if self.cfg["set_vector_hooks"]:
                set_vector_hooks(doc)

    def _check_listeners_get_layers(self) -> None:
        """Listeners read doc._.elmo at prediction: a doc that keeps only the mix would give them nothing."""
        if self.cfg.get("store") == "mix" and self.listeners:
            raise ValueError(
                f"'{self.name}': store = \"mix\" keeps no layers on the docs, but "
                f"{', '.join(repr(c) for c in self.listening_components)} listen to '{self.name}' and read "
                "doc._.elmo (every layer) when they predict. Keep the layers (store = \"layers\"; "
                "store_dtype = \"float16\" halves their memory); store = \"mix\" is for pipelines "
                "whose components do not listen to elmo."
            )

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

        Frozen: prediction only (the layers of a doc are reused across
        epochs); no gradient, no loss. Fine-tuning: the listeners' gradients
        are summed and backpropagated into the biLM, then the optimizer
        updates it; losses[name] is the summed squared gradient, as for
        spaCy's tok2vec.
        """
        if losses is None:
            losses = {}
        validate_examples(examples, "Elmo.update")
        self._check_ready()
        docs = [eg.predicted for eg in examples]
        if not docs or not self.listeners:
            return losses
        batch_id = ElmoListenerLayer.get_batch_id(docs)
        if self.frozen:
            layers, _ = self.model.begin_update(docs)  # frozen: no autograd, the per-doc cache
            for listener in self.listeners:
                listener.receive(batch_id, layers, _discard_gradient)
            return losses
        self._flush_pending()  # the last batch's gradient, where a listener never reported
        losses.setdefault(self.name, 0.0)
        set_dropout_rate(self.model, drop)
        layers, bp_layers = self.model.begin_update(docs)
        pending = self._pending = PendingBackward(bp_layers, [self.model.ops.alloc3f(*x.shape) for x in layers])
        expected = len(self.listeners)

        def backprop(one_d_layers: List[Floats3d]) -> List[Floats3d]:
            # every listener adds its gradient; the last to report, whichever it is (a component
            # may hold two, and the model walk need not list them in backprop order), runs the
            # biLM's backward pass and updates it
            losses[self.name] += pending.add(one_d_layers)
            if pending.reported < expected:
                return [self.model.ops.alloc3f(*x.shape) for x in layers]
            d_docs = pending.run()
            if self._pending is pending:
                self._pending = None
            if sgd is not None:
                self.finish_update(sgd)
            return d_docs

        for listener in self.listeners:
            listener.receive(batch_id, layers, backprop)
        return losses

    def _flush_pending(self) -> None:
        """Backpropagate the gradients of a batch that not every listener reported for.

        A listening component may skip a batch: spaCy's parser and NER return
        before their backward pass when no doc of the batch has their gold
        annotation, textcat when the docs are empty. Waiting for them would
        drop the others' gradients; they go into the biLM here, before the
        next batch or the optimizer's step, instead.
        """
        pending = self._pending
        if pending is None or not pending.reported:
            return  # nothing has arrived yet (spaCy steps the optimizer before the listeners report)
        self._pending = None
        if not self.frozen:
            pending.run()

    def finish_update(self, sgd: Optimizer) -> None:
        """Update the biLM, unless it is frozen (then its weights never change)."""
        if not self.frozen:
            self._flush_pending()
            super().finish_update(sgd)
            self.model.attrs["fresh"] = False  # trained now: no longer random weights

    def get_loss(self, examples: Iterable[Example], scores: Any) -> None:
        pass

    def initialize(
        self,
        get_examples: Callable[[], Iterable[Example]],
        *,
        nlp: Optional[Language] = None,
        loader: Optional[Callable[..., Model]] = None,
        weights: Optional[str] = None,
    ) -> None:
        """Fill the biLM, check the setup and connect the listeners.

        loader: a registered loader ([initialize.components.elmo.loader],
            e.g. spacy-elmo.PublishedLoader.v1) that fills the model's weights.
        weights: any model source (shorthand for `spacy-elmo.SourceLoader.v1`).
        Either replaces what the model holds. Without either, the component's
        own loader runs unless the model holds a biLM already.
        """
        validate_get_examples(get_examples, "Elmo.initialize")
        self._check_listeners_get_layers()
        if loader is not None and weights is not None:
            raise ValueError(f"[initialize.components.{self.name}]: give a loader or weights, not both")
        if weights is not None:
            loader = self.model.attrs[LOADER_ATTR] = resolve_loader(weights)
        if loader is not None:
            loader(self.model)
            filled_from = str(weights) if weights is not None else getattr(loader, "weights", self.cfg["weights"])
            self._record_filled_from(filled_from)
        self._check_ready()
        docs = [eg.predicted for eg in islice(get_examples(), 10)]
        self.model.initialize(X=docs)
        for listener in self.listeners:
            listener.link(self)
        if nlp is not None:
            self._check_widths_read_when_built(nlp)
            self._warn_sentences_unset_in_training(nlp)

    def _check_widths_read_when_built(self, nlp: Language) -> None:
        """spaCy's EntityLinker.v2 sizes its layers from its tok2vec's width when it is built: a
        listener with `width = null` has none then (the biLM's width is known once it is loaded), and
        the entity linker's initialize failed with numpy's "operands could not be broadcast together".
        Refused here in one line naming the setting instead."""
        for name in self.listening_components:
            try:
                if name not in nlp.pipe_names or nlp.get_pipe_meta(name).factory != "entity_linker":
                    continue
            except (KeyError, ValueError):  # a component without factory meta
                continue
            model = getattr(nlp.get_pipe(name), "model", None)
            tok2vec = model.get_ref("tok2vec") if isinstance(model, Model) and model.has_ref("tok2vec") else None
            if tok2vec is not None and tok2vec.maybe_get_dim("nO") is None:
                blocks = _listeners_without_width(nlp.get_pipe_config(name).get("model"), f"components.{name}.model")
                where = ", ".join(f"[{block}]" for block in blocks) or f"[components.{name}.model.tok2vec]"
                raise ValueError(
                    f"'{name}' listens to '{self.name}' with width = null, but spaCy's entity linker sizes its "
                    f"layers from its tok2vec's width when it is built, before the biLM is loaded: set `width` in "
                    f"{where} (e.g. width = 256)")

    def _warn_sentences_unset_in_training(self, nlp: Language) -> None:
        """Warn where a component before this one sets sentence starts but is not among [training]
        annotating_components: nlp.update does not run it, so in training the biLM reads the docs in
        windows, and at prediction sentence by sentence (segmentation "auto"): the listeners would
        learn from other layers than those they predict with."""
        # every component, the disabled ones too: spacy train initializes with the frozen and sourced ones
        # disabled, and those are exactly the ones nlp.update does not run
        names = list(nlp.component_names)
        if self.model.attrs.get("segmentation") not in ("auto", "sents") or self.name not in names:
            return
        annotating = set(nlp.config["training"].get("annotating_components") or [])
        setters = []
        for name in names[:names.index(self.name)]:
            try:
                assigns = nlp.get_pipe_meta(name).assigns
            except (KeyError, ValueError):  # a component without factory meta
                continue
            if "token.is_sent_start" in assigns and name not in annotating:
                setters.append(name)
        if setters:
            warnings.warn(
                f"'{self.name}': {', '.join(setters)} before it set(s) sentence starts, but nlp.update does not run "
                f"{'them' if len(setters) > 1 else 'it'}: in training '{self.name}' reads the docs in windows, at "
                "prediction sentence by sentence, so its listeners learn from other layers than they predict with. "
                f"Add {setters} to [training] annotating_components.",
                stacklevel=2,
            )

    def _record_filled_from(self, weights: Optional[str]) -> None:
        """Record the model an [initialize] loader filled the biLM with (None: the embedded one).

        Only as provenance (`cfg["initialized_from"]`, saved with the cfg), never
        as the `weights` setting: that one is the config's, and a saved cfg whose
        `weights` differed from the config's would read, on loading, as a
        setting changed after the build. replace_listeners and repr read it.
        """
        self.cfg[FILLED_FROM] = weights
        self._set_replace_listener_cfg()

    @property
    def weights_source(self) -> Optional[str]:
        """The model the biLM was filled from: what an [initialize] loader read, else the `weights`
        setting (None: the embedded English biLM). Follows a pipeline through saving and loading."""
        return self.cfg[FILLED_FROM] if FILLED_FROM in self.cfg else self.cfg["weights"]

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        ensure_weights(self.model)  # a pipeline saved before first use still carries its weights
        return super().to_bytes(exclude=exclude)

    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> None:
        ensure_weights(self.model)
        super().to_disk(path, exclude=exclude)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "Elmo":
        _check_readable(bytes_data, f"'{self.name}' component bytes")
        settings = self._settings(exclude)
        super().from_bytes(bytes_data, exclude=exclude)
        self._restore_settings(settings)
        forget_layers(self.model)
        return self

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> "Elmo":
        model_file = Path(path) / "model"
        if "model" not in exclude and model_file.is_file():
            _check_readable(model_file.read_bytes(), str(model_file))
        settings = self._settings(exclude)
        try:
            super().from_disk(path, exclude=exclude)
        except WeightsError as err:  # the shim names bytes, not files: name the file they came from
            raise type(err)(str(err).replace(SHIM_SOURCE, str(model_file))) from None
        self._restore_settings(settings, _saved_pipe_config(Path(path).parent / "config.cfg", self.name))
        forget_layers(self.model)
        return self

    def _settings(self, exclude: Iterable[str] = tuple()) -> Tuple[Dict[str, Any], Dict[str, Any]]:
        """What the component's config set: its cfg and the biLM model's settings.

        Where the biLM came from is no setting: it follows the weights, which
        come from the files, so it is dropped here and the saved cfg's is kept.
        """
        if "cfg" not in exclude:
            self.cfg.pop(FILLED_FROM, None)
        attrs = self.model.attrs
        return dict(self.cfg), {name: attrs[name] for name in defaults.model_settings() if name in attrs}

    def _restore_settings(
        self, settings: Tuple[Dict[str, Any], Dict[str, Any]], saved_config: Optional[Dict[str, Any]] = None
    ) -> None:
        """Put back the settings the config gave, over those the saved files hold.

        The saved cfg and the model's saved attrs are the settings of the
        pipeline that was saved; `spacy.load(path, config={...})` builds the
        component from the config with its overrides, and those must win
        (e.g. frozen = false to fine-tune a loaded pipeline, another backend).
        The weights come from the files, as always.

        `saved_config`: the component's block of the config saved beside it
        (from_disk). A saved setting that differs from that block was changed
        on the component after it was built (e.g. `elmo.frozen = False`
        without the pipe config saying so): the config's still wins, with a
        warning that names it, so that a pipeline saved mid-fine-tuning is not
        frozen again in silence (scripts/finetune.py sets both). An override
        given at loading is no such change and passes without one.
        """
        cfg, attrs = settings
        saved_config = saved_config or {}
        changed = {
            k: (v, cfg[k])
            for k, v in self.cfg.items()
            if k in cfg and k in saved_config and v != cfg[k] and v != saved_config[k]
        }
        saved_weights = changed.get("weights", (None,))[0]
        if saved_weights is not None and saved_weights == self.cfg.get(FILLED_FROM):
            del changed["weights"]  # saved by a version that wrote [initialize] weights there: provenance only
        if changed:
            described = ", ".join(f"{k} = {saved!r} (the config: {ours!r})" for k, (saved, ours) in changed.items())
            warnings.warn(
                f"'{self.name}': the saved component says {described}; its config's settings win. To keep a "
                f"setting changed on the component, set it in the pipe config too before saving, e.g. "
                f"nlp.get_pipe_config('{self.name}')['frozen'] = False, or pass it when loading: "
                f"spacy.load(path, config={{'components': {{'{self.name}': {{...}}}}}})",
                UserWarning,
                stacklevel=3,
            )
        self.cfg.update(cfg)
        self.model.attrs.update(attrs)
        self.frozen = cfg["frozen"]

    def add_label(self, label: str) -> int:
        raise NotImplementedError(f"'{self.name}' has no labels")

    def __repr__(self) -> str:
        return f"<Elmo '{self.name}' frozen={self.frozen} weights={self.weights_source or 'default'}>"


TOK2VEC = "spacy-elmo.ElmoTok2Vec.v1"
TOK2VEC_LISTENER_ARGS = ("elmo", "output_elmo")


def _replace_listener(model: Model, listener: Model, component: Any) -> Model:
    """`replace_listener` for spaCy's replace_listeners, which calls it after writing the configs and before
    swapping the models: where it was given a listener's own path inside an ElmoTok2Vec
    (`"model.tok2vec.elmo"`, the dot-path spaCy's docs describe) instead of the tok2vec's, spaCy wrote the
    whole rewritten ElmoTok2Vec block there, and the pipeline trained and saved but did not load
    ("mismatched structure"). Such a block nested in its own listener's place is put right here."""
    if isinstance(listener, ElmoListenerLayer):
        for nlp, position in _holding_pipelines(listener):
            pipe_config = nlp._pipe_configs.get(nlp.pipe_names[position])
            if pipe_config is not None:
                _unnest_tok2vec(pipe_config)
                _keep_windows_past_sentence_setters(nlp, component, position, model, pipe_config)
    return replace_listener(model, listener, component)


def _keep_windows_past_sentence_setters(nlp: Language, component: Any, position: int, model: Model,
                                        pipe_config: Dict[str, Any]) -> None:
    """A copy of the biLM runs at the listening component's place, not at elmo's. With segmentation
    "auto", where a component between the two sets sentence starts (a senter, a parser), the copy
    would read the docs sentence by sentence where elmo read them in windows, and the component's
    predictions would change (3 of 15 tags in a test). The copy, and the standalone block written
    in its config, then read in windows, as elmo did; a warning says so."""
    if setting(model, "segmentation") != "auto" or not isinstance(component, Elmo):
        return
    names = nlp.pipe_names
    if component.name not in names or names.index(component.name) >= position:
        return
    if any("token.is_sent_start" in _assigns(nlp, name) for name in names[:names.index(component.name)]):
        return  # a setter before elmo too: elmo read sentences, as the copy will
    setters = [name for name in names[names.index(component.name) + 1:position]
               if "token.is_sent_start" in _assigns(nlp, name)]
    if not setters:
        return
    holder = names[position]
    model.attrs["segmentation"] = ConfigValue("windows")
    bilm_config = nlp.get_pipe_config(component.name).get("model")
    _set_standalone_segmentation(pipe_config, bilm_config, "windows")
    warnings.warn(
        f"replace_listeners: '{holder}' now runs its own copy of '{component.name}''s biLM after "
        f"{', '.join(setters)}, which set(s) sentence starts; '{component.name}' read the docs before them, in "
        f"windows (segmentation \"auto\"), so the copy reads them in windows too (segmentation = \"windows\" in "
        f"'{holder}''s config) and predicts as before.", stacklevel=4)


def _listeners_without_width(config: Any, where: str) -> List[str]:
    """The config sections (dotted) of the ElmoListener blocks in `config` whose width is null."""
    if not isinstance(config, dict):
        return []
    found = [where] if config.get("@architectures") == LISTENER and config.get("width") is None else []
    for key, value in config.items():
        found += _listeners_without_width(value, f"{where}.{key}")
    return found


def _assigns(nlp: Language, name: str) -> List[str]:
    try:
        return list(nlp.get_pipe_meta(name).assigns)
    except (KeyError, ValueError):  # a component without factory meta
        return []


def _set_standalone_segmentation(config: Any, bilm_config: Any, segmentation: str) -> None:
    """Set `segmentation` in each standalone block of `config` whose biLM block is `bilm_config` (a copy
    of the elmo component's model block, as replace_listener_cfg writes it)."""
    if not isinstance(config, dict):
        return
    if config.get("@architectures") == STANDALONE and isinstance(config.get("bilm"), dict):
        compared = {key: value for key, value in config["bilm"].items() if key != "segmentation"}
        if bilm_config is None or compared == {k: v for k, v in dict(bilm_config).items() if k != "segmentation"}:
            config["bilm"]["segmentation"] = segmentation
    for value in config.values():
        _set_standalone_segmentation(value, bilm_config, segmentation)


def _unnest_tok2vec(config: Any) -> None:
    """Replace every ElmoTok2Vec block found in the listener argument of an ElmoTok2Vec block by that
    argument of the inner block (one never holds another: its listener arguments give ELMo mixes)."""
    if not isinstance(config, dict):
        return
    if config.get("@architectures") == TOK2VEC:
        for key in TOK2VEC_LISTENER_ARGS:
            inner = config.get(key)
            while isinstance(inner, dict) and inner.get("@architectures") == TOK2VEC and key in inner:
                config[key] = inner = inner[key]
    for value in config.values():
        _unnest_tok2vec(value)


def _holding_pipelines(listener: ElmoListenerLayer) -> Iterator[Tuple[Language, int]]:
    """(pipeline, position of the component whose model holds `listener`) for each pipeline that
    built an elmo component and holds it (a sourced component may sit in more than one)."""
    for nlp in list(_PIPELINES):
        for position, (_, proc) in enumerate(nlp.pipeline):
            model = getattr(proc, "model", None)
            if isinstance(model, Model) and any(node is listener for node in model.walk()):
                yield nlp, position
                break


def disabled_upstreams(listener: ElmoListenerLayer) -> List[str]:
    """The elmo components the listener's upstream names in a pipeline that holds it, where every one of
    them is disabled (spaCy disables [training] frozen_components while it initializes); [] otherwise."""
    for nlp, _ in _holding_pipelines(listener):
        matched = [name for name, proc in nlp.components
                   if isinstance(proc, Elmo) and listener.upstream_name in ("*", name)]
        if matched and all(name in nlp.disabled for name in matched):
            return matched
    return []


def unlinked_upstream(listener: ElmoListenerLayer) -> Optional[Tuple[str, str]]:
    """(elmo component, listening component) where the listener's upstream is an enabled elmo component
    before it that does not know it: spacy.load(disable=...) links only the enabled components'
    listeners, and nlp.enable_pipe does not link them later. None where it is linked, or not known."""
    for nlp, position in _holding_pipelines(listener):
        holder = nlp.pipeline[position][0]
        for name, proc in nlp.pipeline[:position]:
            if isinstance(proc, Elmo) and listener.upstream_name in ("*", name):
                return None if any(node is listener for node in proc.listeners) else (name, holder)
    return None


def misplaced_upstream(listener: ElmoListenerLayer) -> Optional[Tuple[str, str]]:
    """(elmo component, listening component) where the listener's upstream comes after the component
    that holds it in a pipeline that built an elmo component; None where no such pipeline is known.

    spaCy links listeners only to components placed before them, so a listener
    whose elmo comes later is unlinked, and its error must name the order.
    """
    for nlp, position in _holding_pipelines(listener):
        for name, proc in nlp.pipeline[position + 1 :]:
            if isinstance(proc, Elmo) and listener.upstream_name in ("*", name):
                return name, nlp.pipeline[position][0]
    return None


def holding_pipeline_names(
    listener: ElmoListenerLayer, writer: Optional[str] = None
) -> Optional[Tuple[List[str], List[str]]]:
    """(every component's name, the disabled ones') of the pipeline whose components hold `listener`;
    with `writer`, of one that also has a component of that name (the one that wrote a doc's layers).
    None: no such pipeline is known, as in `misplaced_upstream` (a component sourced into a pipeline
    that built no elmo component of its own is known only by the pipeline it came from, whose names
    would be the wrong ones)."""
    for nlp, _ in _holding_pipelines(listener):
        if writer is None or writer in nlp.component_names:
            return list(nlp.component_names), list(nlp.disabled)
    return None


def _saved_pipe_config(config_file: Path, name: str) -> Optional[Dict[str, Any]]:
    """The `[components.NAME]` block of a saved pipeline's config.cfg, its variables (`${vars.x}`)
    filled in as saved, so that they compare with the component's values (None: none readable)."""
    if not config_file.is_file():
        return None
    try:
        config = Config().from_disk(config_file, interpolate=False)
        try:
            config = config.interpolate()
        except Exception:  # a variable it cannot fill: the block as written
            pass
        section = config.get("components", {}).get(name)
    except Exception:  # a config this component cannot read is spaCy's to report, not ours
        return None
    return dict(section) if isinstance(section, dict) else None


class PendingBackward:
    """One batch's backward pass into the biLM: the listeners' summed gradients, run at most once."""

    def __init__(self, bp_layers: Callable, d_layers: List[Any]) -> None:
        self.bp_layers: Optional[Callable] = bp_layers
        self.d_layers = d_layers
        self.reported = 0
        self.nonzero = False

    def add(self, one_d_layers: List[Any]) -> float:
        """Add one listener's gradient; return its summed square (the component's loss, as tok2vec's)."""
        loss = 0.0
        for total, one in zip(self.d_layers, one_d_layers):
            total += one
            loss += float((one**2).sum())
        self.reported += 1
        self.nonzero = self.nonzero or loss != 0.0  # NaN counts as nonzero: it must reach the biLM's checks
        return loss

    def run(self) -> Any:
        """The biLM's backward pass (its gradients accumulate on the parameters); once only.

        Skipped when every listener sent zeros (all at `grad_factor = 0`):
        the parameters then get no gradient at all, so the optimizer leaves
        them alone (no weight decay either) and no time goes into a backward
        pass that computes zeros.
        """
        bp_layers, self.bp_layers = self.bp_layers, None
        if bp_layers is None or not self.nonzero:
            return []
        return bp_layers(self.d_layers)


def _check_readable(data: bytes, source: str) -> None:
    """spaCy's and thinc's msgpack envelope around the biLM: a cut or garbled one is a WeightsError
    naming `source`, not msgpack's exception (the biLM's own bytes carry a checksum)."""
    try:
        srsly.msgpack_loads(data)
    except Exception as err:  # msgpack raises several types for cut or garbled input
        raise WeightsError(f"{source}: truncated or corrupted ({type(err).__name__}: {err})") from None


def _discard_gradient(d_layers: List[Floats3d]) -> list:
    """The frozen biLM's callback for its listeners: there is nothing to train."""
    return []


__all__ = ["Elmo", "make_elmo", "ElmoNotReady", "DEFAULT_MODEL_CONFIG"]
