"""`spacy-elmo.ElmoListener.v1`: a downstream component's view of the `elmo` component.

Like spaCy's Tok2VecListener: during `nlp.update` the upstream `elmo`
component computes the layers once per batch and hands them, with a callback
for the gradient, to every listener (`receive`). At prediction, or when the
upstream did not run in this update (frozen with `frozen_components`), the
listener reads `doc._.elmo`; if a doc has none, it asks its upstream
component to compute it, so a downstream component also works on docs that
never went through `elmo`.

Each listener feeds its own ScalarMix: every task learns its own weighting of
the biLM layers (ELMo eq. 1), and optionally projects to a given width.
"""
import weakref
from typing import Callable, List, Optional

from spacy.util import registry
from thinc.api import Linear, Model, chain, with_array
from thinc.types import Floats2d, Floats3d

from .scalar_mix import ScalarMix

_UPSTREAM_HELP = (
    "add an 'elmo' component before it (nlp.add_pipe('elmo', before=...)), or set the "
    "listener's upstream to the name of the elmo component"
)


class ElmoListenerLayer(Model):
    """Receives the upstream's per-doc layers (L+1, n, width) and passes them on."""

    name = "elmo-listener"

    def __init__(self, upstream_name: str) -> None:
        Model.__init__(self, name=self.name, forward=_forward, dims={"nO": None, "nL": None})
        self.upstream_name = upstream_name
        self._batch_id: Optional[int] = None
        self._outputs = None
        self._backprop = None
        self._upstream_ref = None

    @classmethod
    def get_batch_id(cls, docs) -> int:
        """A content hash of a batch, to check that the docs are the ones received for."""
        return sum(sum(token.orth for token in doc) for doc in docs)

    def receive(self, batch_id: int, outputs: List[Floats3d], backprop: Callable) -> None:
        self._batch_id = batch_id
        self._outputs = outputs
        self._backprop = backprop

    def clear(self) -> None:
        self._batch_id = None
        self._outputs = None
        self._backprop = None

    def link(self, component) -> None:
        """Remember the upstream component (weakly), to compute layers docs lack."""
        self._upstream_ref = weakref.ref(component)
        bilm_model = component.model
        for name in ("nO", "nL"):
            if bilm_model.has_dim(name) and bilm_model.get_dim(name):
                self._dims[name] = bilm_model.get_dim(name)

    @property
    def upstream(self):
        return self._upstream_ref() if self._upstream_ref is not None else None

    def verify_inputs(self, docs) -> None:
        batch_id = self.get_batch_id(docs)
        if batch_id != self._batch_id:
            raise ValueError(
                f"ElmoListener received layers for batch {self._batch_id} but was called on batch {batch_id}: "
                "the upstream elmo component and this component must be updated on the same docs "
                "(nlp.update does this)"
            )


def _forward(model: ElmoListenerLayer, docs, is_train: bool):
    if is_train and model._batch_id is not None:
        model.verify_inputs(docs)
        return model._outputs, model._backprop
    outputs = []
    missing = [doc for doc in docs if doc._.elmo is None]
    if missing:
        upstream = model.upstream
        if upstream is None:
            raise ValueError(
                f"ElmoListener (upstream '{model.upstream_name}') got docs without doc._.elmo and is not "
                f"linked to an elmo component: {_UPSTREAM_HELP}"
            )
        upstream.set_annotations(missing, upstream.predict(missing))
    for doc in docs:
        layers = doc._.elmo
        outputs.append(model.ops.asarray3f(layers))
        model._dims["nL"], model._dims["nO"] = layers.shape[0], layers.shape[2]
    return outputs, lambda d_outputs: []


@registry.architectures("spacy-elmo.ElmoListener.v1")
def ElmoListener(
    width: Optional[int] = None,
    upstream: str = "*",
    mix: Optional[Model[List[Floats3d], List[Floats2d]]] = None,
) -> Model[List, List[Floats2d]]:
    """Token vectors for a downstream component: its own mix of the upstream's layers.

    width: project the mix to this width (None: the biLM's width, 2 * projection_dim).
    upstream: name of the elmo component to listen to ("*": any).
    mix: the ScalarMix; `spacy-elmo.ScalarMix.v1` with defaults when omitted.
    """
    if width is not None and width < 1:
        raise ValueError(f"ElmoListener: width must be a positive integer or null, got {width}")
    listener = ElmoListenerLayer(upstream)
    mix = mix if mix is not None else ScalarMix()
    layers = [listener, mix]
    if width is not None:
        layers.append(with_array(Linear(nO=width)))
    model = chain(*layers)
    model.set_ref("listener", listener)
    model.set_ref("mix", mix)
    if width is not None:
        model.set_dim("nO", width)
    model.attrs["elmo_listener"] = True
    model.init = _init_listener_chain(model.init)
    return model


def _init_listener_chain(chain_init):
    def init(model: Model, X=None, Y=None):
        listener = model.get_ref("listener")
        if X is not None:
            # run the listener once so the mix and projection see real shapes
            layers, _ = listener(X, is_train=False)
            mix = model.get_ref("mix")
            mix.initialize(X=layers)
            mixed, _ = mix(layers, is_train=False)
            for layer in model.layers[2:]:
                layer.initialize(X=mixed)
            if not model.has_dim("nO") or model.get_dim("nO") is None:
                model.set_dim("nO", model.layers[-1].get_dim("nO") if len(model.layers) > 2 else listener.get_dim("nO"))
            return model
        return chain_init(model, X=X, Y=Y)

    return init


__all__ = ["ElmoListener", "ElmoListenerLayer"]
