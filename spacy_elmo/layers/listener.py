"""`spacy-elmo.ElmoListener.v1`: a downstream component's view of the `elmo` component.

Like spaCy's Tok2VecListener, a listener never runs its upstream:

* during `nlp.update`, the `elmo` component computes the layers once per
  batch and hands them to every listener (`receive`), with a callback for
  the gradient; the listener calls it once and forgets the batch
  (`backprop_and_clear`);
* during an update in which `elmo` did not run (it is in
  `frozen_components`), the listener reads `doc._.elmo`, which `elmo` set
  if it is in `annotating_components`; otherwise that is an error;
* at prediction, the listener reads `doc._.elmo`; a doc without it (the
  `elmo` component disabled, or a component called on its own) gets zeros
  of the right shape.

Each listener feeds its own ScalarMix: every task learns its own weighting of
the biLM layers (ELMo eq. 1), and optionally projects to a given width.
"""
from typing import Callable, List, Optional

from spacy.util import registry
from thinc.api import Linear, Model, chain, with_array
from thinc.layers.chain import init as chain_init
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
        self._outputs: Optional[List[Floats3d]] = None
        self._backprop: Optional[Callable] = None

    @classmethod
    def get_batch_id(cls, docs) -> int:
        """A content hash of a batch, to check that the docs are the ones received for."""
        return sum(sum(token.orth for token in doc) for doc in docs)

    def receive(self, batch_id: int, outputs: List[Floats3d], backprop: Callable) -> None:
        self._batch_id = batch_id
        self._outputs = outputs
        self._backprop = backprop

    def backprop_and_clear(self, d_outputs: List[Floats3d]) -> list:
        """Call the received gradient callback once, then forget the batch (its memory too)."""
        result = self._backprop(d_outputs) if self._backprop is not None else []
        self.clear()
        return result

    def clear(self) -> None:
        self._batch_id = None
        self._outputs = None
        self._backprop = None

    def link(self, component) -> None:
        """Take the upstream's dims (layers, width), for docs it has not annotated."""
        bilm_model = component.model
        for name in ("nO", "nL"):
            value = bilm_model.maybe_get_dim(name)
            if value:
                self.set_dim(name, value, force=True)

    def verify_inputs(self, docs) -> None:
        batch_id = self.get_batch_id(docs)
        if batch_id != self._batch_id:
            raise ValueError(
                f"ElmoListener received layers for batch {self._batch_id} but was called on batch {batch_id}: "
                "the upstream elmo component and this component must be updated on the same docs "
                "(nlp.update does this)"
            )


def _forward(model: ElmoListenerLayer, docs, is_train: bool):
    if is_train:
        if model._batch_id is not None:
            model.verify_inputs(docs)
            return model._outputs, model.backprop_and_clear
        # the upstream did not run in this update: it must have annotated the docs
        outputs = []
        for doc in docs:
            layers = doc._.elmo
            if layers is None:
                raise ValueError(
                    f"ElmoListener (upstream '{model.upstream_name}') got a doc without doc._.elmo during "
                    "training: the elmo component did not run in this update. If it is in [training] "
                    "frozen_components, add it to annotating_components too, or leave it out of "
                    "frozen_components (its own 'frozen' setting keeps the biLM fixed)."
                )
            outputs.append(model.ops.asarray3f(layers))
        return outputs, _empty_backprop
    n_layers, width = model.maybe_get_dim("nL"), model.maybe_get_dim("nO")
    outputs = []
    for doc in docs:
        layers = doc._.elmo
        if layers is not None:
            outputs.append(model.ops.asarray3f(layers))
        elif n_layers and width:
            # the upstream did not annotate this doc (disabled, or not run): zeros of the right shape
            outputs.append(model.ops.alloc3f(n_layers, len(doc), width))
        else:
            raise ValueError(
                f"ElmoListener (upstream '{model.upstream_name}') got docs without doc._.elmo and is not "
                f"linked to an elmo component: {_UPSTREAM_HELP}"
            )
    return outputs, _empty_backprop


def _empty_backprop(d_outputs) -> list:  # module level, for pickling
    return []


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
    return mix_chain(ElmoListenerLayer(upstream), width, mix, source="ElmoListener")


def mix_chain(
    layers_source: Model, width: Optional[int], mix: Optional[Model], source: str
) -> Model[List, List[Floats2d]]:
    """chain(layers_source, mix[, projection]): docs -> per doc (n_tokens, width).

    The listener and the standalone model (what `replace_listeners` puts in a
    listener's place) share this shape, so one can be saved and loaded as the
    other.
    """
    if width is not None and width < 1:
        raise ValueError(f"{source}: width must be a positive integer or null, got {width}")
    mix = mix if mix is not None else ScalarMix()
    layers = [layers_source, mix]
    if width is not None:
        layers.append(with_array(Linear(nO=width)))
    model: Model[List, List[Floats2d]] = chain(*layers)
    model.set_ref("listener", layers_source)
    model.set_ref("mix", mix)
    if width is not None:
        model.set_dim("nO", width)
    model.attrs["elmo_listener"] = True
    model.init = _init_mix_chain
    return model


def _init_mix_chain(model: Model, X=None, Y=None) -> Model:
    """Run the layers' source once so the mix and projection see real shapes."""
    source = model.layers[0]
    if X is None:
        chain_init(model, X=X, Y=Y)
        return model
    source.initialize(X=X)
    layers, _ = source(X, is_train=False)
    mix = model.layers[1]
    mix.initialize(X=layers)
    mixed, _ = mix(layers, is_train=False)
    for layer in model.layers[2:]:
        layer.initialize(X=mixed)
    if model.maybe_get_dim("nO") is None:
        last = model.layers[-1] if len(model.layers) > 2 else source
        model.set_dim("nO", last.get_dim("nO"))
    return model


__all__ = ["ElmoListener", "ElmoListenerLayer", "mix_chain"]
