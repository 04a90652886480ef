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

Two settings of the paper's downstream use belong to the listener, not to
the upstream (each task sets its own):

* `dropout`: dropout of the mixed vector in training, at a fixed rate that
  spaCy's `[training] dropout` does not overwrite (see `ElmoDropout`);
* `grad_factor`: the factor applied to the gradient this listener sends back
  to the upstream (see `GradFactor`), as spacy-transformers' listeners do;
  0 keeps this task from fine-tuning the biLM.
"""
import math
from typing import TYPE_CHECKING, Any, Callable, Iterable, List, Optional, Tuple

from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Linear, Model, chain, with_array
from thinc.layers.chain import forward as chain_forward
from thinc.layers.chain import init as chain_init
from thinc.types import Floats2d, Floats3d

from .config_value import ConfigValue, setting
from .scalar_mix import ScalarMix

if TYPE_CHECKING:
    from ..pipeline.component import Elmo  # the pipeline package imports this module

DEFAULT_DROPOUT = 0.5
"""The listener's default dropout of the mixed vector (AllenNLP's `Elmo` default)."""

_UPSTREAM_HELP = (
    "add an 'elmo' component before it (nlp.add_pipe('elmo', before=...)), or set the "
    "listener's upstream to the name of the elmo component"
)


class ElmoListenerLayer(Model):
    """Receives the upstream's per-doc layers (L+1, n, width) and passes them on."""

    name = "elmo-listener"

    def __init__(self, upstream_name: str) -> None:
        Model.__init__(
            self, name=self.name, forward=_checked_forward, init=_init_listener, dims={"nO": None, "nL": None},
            attrs={INITIALIZED_WIDTH: None},
        )
        self.upstream_name = upstream_name
        self._batch_id: Optional[int] = None
        self._outputs: Optional[List[Floats3d]] = None
        self._backprop: Optional[Callable] = None

    @classmethod
    def get_batch_id(cls, docs: Iterable[Doc]) -> int:
        """A content hash of a batch, to check that the docs are the ones received for: in their order
        (a sum of the token ids took the same docs reordered, whose layers then went to the wrong docs)."""
        return hash(tuple(tuple(token.orth for token in doc) for doc in docs))

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

    def __getstate__(self) -> Tuple[dict, dict]:
        """What pickle and deepcopy keep: the attributes and thinc's `Model.__slots__` (its function,
        dims, attrs, layers...), without a batch received but never consumed (its component skipped
        it), which holds the upstream's gradient callback, a closure: the copy has received nothing."""
        state = dict(self.__dict__)
        state.update(_batch_id=None, _outputs=None, _backprop=None)
        slots = {name: getattr(self, name) for cls in type(self).__mro__
                 for name in getattr(cls, "__slots__", ()) if hasattr(self, name)}
        return state, slots

    def link(self, component: "Elmo") -> None:
        """Take the upstream's dims (layers, width), for docs it has not annotated."""
        bilm_model = component.model
        for name in ("nO", "nL"):
            value = bilm_model.maybe_get_dim(name)
            if value:
                self.set_dim(name, value, force=True)

    def verify_inputs(self, docs: Iterable[Doc]) -> None:
        batch_id = self.get_batch_id(docs)
        if batch_id != self._batch_id:
            raise ValueError(
                f"ElmoListener received layers for batch {self._batch_id} but was called on batch {batch_id}: "
                "the upstream elmo component and this component must be updated on the same docs "
                "(nlp.update does this)"
            )


INITIALIZED_WIDTH = "initialized_width"
"""Listener attr: the width of the layers the listening component was initialized on (saved with it)."""


def _init_listener(model: ElmoListenerLayer, X: Optional[List[Doc]] = None,
                   Y: Optional[List[Floats3d]] = None) -> ElmoListenerLayer:
    """Record the layers' width the listening component's weights are being made for."""
    model.attrs[INITIALIZED_WIDTH] = model.maybe_get_dim("nO")
    return model


def _checked_forward(model: ElmoListenerLayer, docs: List[Doc], is_train: bool) -> Tuple[List[Floats3d], Callable]:
    """`_forward`, refusing layers of another width than the component was initialized on: a biLM of
    other sizes put in the upstream's place (its model file replaced, other weights at load) would
    fail later in the component's first matrix product, with a shape error naming neither."""
    outputs, backprop = _forward(model, docs, is_train)
    expected = model.attrs.get(INITIALIZED_WIDTH)
    for layers in outputs:
        if expected and layers.shape[-1] != expected:
            raise ValueError(
                f"ElmoListener (upstream '{model.upstream_name}'): the elmo component gives layers of width "
                f"{layers.shape[-1]}, but the component listening to it was initialized on width {expected}: "
                "its biLM was replaced by one of other sizes. Use the biLM it was trained with, or train the "
                "component anew from its config on this biLM (spacy train)"
            )
    return outputs, backprop


def _forward(model: ElmoListenerLayer, docs: List[Doc], is_train: bool) -> Tuple[Any, Callable]:
    # the outputs: List[Floats3d] (Any: those received are typed Optional, set while a batch is held)
    if is_train:
        if model._batch_id is not None:
            model.verify_inputs(docs)
            return model._outputs, model.backprop_and_clear
        # the upstream did not run in this update: it must have annotated the docs
        outputs = []
        for doc in docs:
            layers = _upstream_layers(model, doc)
            if layers is None:
                raise ValueError(
                    _missing_upstream(model) or _unlinked(model) or
                    f"ElmoListener (upstream '{model.upstream_name}') got a doc without doc._.elmo during "
                    "training: the elmo component did not run in this update. nlp.update runs it before its "
                    "listeners; under spacy train, if it is in [training] frozen_components, add it to "
                    "annotating_components too, or leave it out of frozen_components (its own 'frozen' "
                    "setting keeps the biLM fixed). A listening component updated on its own (its update(), "
                    "or `spacy debug model`, which runs only tok2vec and transformer upstreams) needs its "
                    "docs annotated by the elmo component first."
                )
            outputs.append(model.ops.asarray3f(layers))
        return outputs, _empty_backprop
    n_layers, width = model.maybe_get_dim("nL"), model.maybe_get_dim("nO")
    outputs = []
    for doc in docs:
        layers = _upstream_layers(model, doc)
        if layers is not None:
            outputs.append(model.ops.asarray3f(layers))
        elif n_layers and width:
            # the upstream did not annotate this doc (disabled, or not run): zeros of the right shape
            outputs.append(model.ops.alloc3f(n_layers, len(doc), width))
        else:
            raise ValueError(_unlinked_message(model))
    return outputs, _empty_backprop


def _unlinked_message(model: ElmoListenerLayer) -> str:
    """Why an unlinked listener got docs without layers: an elmo component placed after the listening
    one (spaCy links only later components, so the order is the problem), else no elmo component at all."""
    from ..pipeline.component import misplaced_upstream  # the pipeline package imports this module

    misplaced = misplaced_upstream(model)
    if misplaced is not None:
        upstream, component = misplaced
        return (
            f"ElmoListener (upstream '{model.upstream_name}'): '{upstream}' must come before '{component}' "
            f"in the pipeline (add it with nlp.add_pipe('{upstream}', before='{component}'))"
        )
    missing = _missing_upstream(model)
    if missing is not None:
        return missing
    return (
        f"ElmoListener (upstream '{model.upstream_name}') got docs without doc._.elmo and is not "
        f"linked to an elmo component: {_UPSTREAM_HELP}"
    )


def _upstream_layers(model: ElmoListenerLayer, doc: Doc) -> Any:
    """doc._.elmo, checked to come from this listener's upstream.

    Every `elmo` component writes doc._.elmo; in a pipeline with two, the
    second replaces the first's layers, and a listener of the first placed
    after the second would read them (in training it receives its own
    upstream's). That is refused, naming the remedy.
    """
    from ..pipeline.extensions import layers_source  # the pipeline package imports this module

    layers = doc._.elmo
    source = layers_source(doc) if layers is not None else None
    if source is not None and model.upstream_name not in ("*", source):
        raise ValueError(_other_source_message(model, source))
    return layers


def _unlinked(model: ElmoListenerLayer) -> Optional[str]:
    """The message for a listener its elmo component does not know (so it sends it no layers in
    training); None where it is linked, or where the pipeline is not known."""
    from ..pipeline.component import unlinked_upstream  # the pipeline package imports this module

    found = unlinked_upstream(model)
    if found is None:
        return None
    elmo, holder = found
    return (
        f"ElmoListener of '{holder}' (upstream '{model.upstream_name}'): '{elmo}' ran, but it does not know this "
        f"listener, so it sent it no layers: '{holder}' was disabled when the pipeline was loaded "
        "(spacy.load(..., disable=...) links only the enabled components' listeners, and nlp.enable_pipe does "
        "not link them later). Load the pipeline without disabling it (exclude what you do not need), or call "
        "nlp._link_components() after enabling it."
    )


def _missing_upstream(model: ElmoListenerLayer, source: Optional[str] = None) -> Optional[str]:
    """The message for a listener whose upstream names no component of its pipeline (renamed, or a
    typo) or a disabled one; None where it names an enabled one, or where the pipeline is not known.
    `source`: the component whose layers the doc holds, the likely upstream."""
    from ..pipeline.component import holding_pipeline_names  # the pipeline package imports this module

    upstream = model.upstream_name
    known = holding_pipeline_names(model, writer=source)
    if known is None:
        return None
    if upstream == "*":  # any elmo component: the message is for one whose every candidate is disabled
        from ..pipeline.component import disabled_upstreams

        disabled_elmos = disabled_upstreams(model)
        return _disabled_message(upstream, disabled_elmos[0]) if disabled_elmos else None
    names, disabled = known
    if upstream in disabled:
        return _disabled_message(upstream, upstream)
    if upstream in names:
        return None
    fix = f"'{source}' or '*'" if source else "the name of its elmo component, or '*'"
    found = f"its layers came from '{source}'" if source else f"its components: {', '.join(names)}"
    return (
        f"ElmoListener (upstream '{upstream}'): the pipeline has no component named '{upstream}' "
        f"({found}): set the listener's upstream to {fix}"
    )


def _disabled_message(upstream: str, name: str) -> str:
    return (
        f"ElmoListener (upstream '{upstream}'): the elmo component '{name}' is disabled, so it "
        "wrote no doc._.elmo: enable it (nlp.enable_pipe, or leave it out of select_pipes' and "
        "spacy.load's disable). spaCy also disables the components in [training] frozen_components "
        f"while it initializes the pipeline, so a new '{name}' there fails even when it is in "
        f"annotating_components too: leave '{name}' out of frozen_components (its own 'frozen' setting "
        "keeps the biLM fixed), or source it from a trained pipeline and list it in annotating_components too"
    )


def _other_source_message(model: ElmoListenerLayer, source: str) -> str:
    """Why a doc's layers came from `source`, not the listener's upstream: no component of that name,
    else one placed before `source`, which replaced its layers; where the pipeline is not known (a
    component sourced into a pipeline that built no elmo component), both possibilities."""
    from ..pipeline.component import holding_pipeline_names  # the pipeline package imports this module

    upstream = model.upstream_name
    missing = _missing_upstream(model, source)
    if missing is not None:
        return missing
    head = (
        f"ElmoListener (upstream '{upstream}') got doc._.elmo written by the elmo component '{source}'"
    )
    if holding_pipeline_names(model, writer=source) is None:
        return (
            f"{head}, not by '{upstream}': if '{source}' is its elmo component (renamed, or sourced under "
            f"another name), set the listener's upstream to '{source}' or '*'; if '{upstream}' is another "
            f"elmo component, put the components that listen to it before '{source}' in the pipeline"
        )
    return (
        f"{head}, which ran after '{upstream}' and replaced its layers: put the components "
        f"that listen to '{upstream}' before '{source}' in the pipeline"
    )


def _empty_backprop(d_outputs: List[Floats3d]) -> list:  # module level, for pickling
    return []


DROPOUT_ATTR = "elmo_dropout"
"""ElmoDropout's rate attr: not thinc's `dropout_rate`, which `set_dropout_rate` overwrites."""


def ElmoDropout(rate: float) -> Model[List[Floats2d], List[Floats2d]]:
    """Dropout of the mixed ELMo vectors at a fixed rate, in training only.

    The paper regularises the ELMo vector with dropout of its own; its rate is
    a setting of the listener. spaCy calls thinc's `set_dropout_rate(model,
    drop)` on every update, which sets every `dropout_rate` attr it finds, so
    the rate is kept under another attr name (`DROPOUT_ATTR`) and only this
    layer reads it. At prediction (`is_train` false) the input is returned
    unchanged; in training each value is zeroed with probability `rate` and
    the others scaled by 1 / (1 - rate) (inverted dropout, as torch's and
    thinc's).
    """
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {rate}")
    return Model("elmo-dropout", _dropout_forward, attrs={DROPOUT_ATTR: ConfigValue(float(rate))})


def _dropout_forward(model: Model, Xs: List[Floats2d], is_train: bool) -> Tuple[List[Floats2d], Callable]:
    rate = float(setting(model, DROPOUT_ATTR))
    if not is_train or not rate:
        return Xs, _identity_backprop
    masks = [model.ops.get_dropout_mask(X.shape, rate) for X in Xs]

    def backprop(dYs: List[Floats2d]) -> List[Floats2d]:
        return [dY * mask for dY, mask in zip(dYs, masks)]

    return [X * mask for X, mask in zip(Xs, masks)], backprop


def _identity_backprop(dYs: List[Floats2d]) -> List[Floats2d]:  # module level, for pickling
    return dYs


def GradFactor(factor: float) -> Model[List[Floats3d], List[Floats3d]]:
    """Pass the layers on unchanged; multiply the gradient going back to their source by `factor`.

    Placed between the layers' source (the listener, or a standalone biLM)
    and the mix, so the mix and everything after it learn from the full
    gradient, while the biLM receives `factor` times it: 1 is plain
    backpropagation, 0 sends zeros (this task does not fine-tune the biLM),
    values in between fine-tune it more gently than the task layers.
    """
    if not math.isfinite(factor):
        raise ValueError(f"grad_factor must be a finite number, got {factor}")
    return Model("elmo-grad-factor", _grad_factor_forward, attrs={"grad_factor": ConfigValue(float(factor))})


def _grad_factor_forward(model: Model, Xs: List[Floats3d], is_train: bool) -> Tuple[List[Floats3d], Callable]:
    factor = float(setting(model, "grad_factor"))

    def backprop(dXs: List[Floats3d]) -> List[Floats3d]:
        if factor == 1.0:
            return dXs
        if factor == 0.0:
            return [model.ops.xp.zeros_like(dX) for dX in dXs]
        return [dX * factor for dX in dXs]

    return Xs, backprop


@registry.architectures("spacy-elmo.ElmoListener.v1")
def ElmoListener(
    width: Optional[int] = None,
    upstream: str = "*",
    mix: Optional[Model[List[Floats3d], List[Floats2d]]] = None,
    dropout: float = DEFAULT_DROPOUT,
    grad_factor: float = 1.0,
) -> Model[List, List[Floats2d]]:
    """Token vectors for a downstream component: its own mix of the upstream's layers.

    width: project the mix to this width (None: the biLM's width, 2 * projection_dim).
    upstream: name of the elmo component to listen to ("*": any).
    mix: the ScalarMix; `spacy-elmo.ScalarMix.v1` with defaults when omitted.
    dropout: dropout rate of the mixed vector in training, in [0, 1); fixed,
        not overwritten by spaCy's `[training] dropout`.
    grad_factor: factor on the gradient sent back to the upstream (0: this
        listener does not fine-tune the biLM; matters only when elmo is not frozen).
    """
    return mix_chain(
        ElmoListenerLayer(upstream), width, mix, source="ElmoListener", dropout=dropout, grad_factor=grad_factor
    )


def mix_chain(
    layers_source: Model,
    width: Optional[int],
    mix: Optional[Model],
    source: str,
    dropout: float = DEFAULT_DROPOUT,
    grad_factor: float = 1.0,
) -> Model[List, List[Floats2d]]:
    """chain(layers_source, grad factor, mix, dropout[, projection]): docs -> per doc (n_tokens, width).

    The listener and the standalone model (what `replace_listeners` puts in a
    listener's place) share this shape, so one can be saved and loaded as the
    other. The dropout and grad-factor layers are there at every setting
    (rate 0 and factor 1 are identities), so the structure does not depend
    on the values.
    """
    if width is not None and width < 1:
        raise ValueError(f"{source}: width must be a positive integer or null, got {width}")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"{source}: dropout must be in [0, 1), got {dropout}")
    if not math.isfinite(grad_factor):
        raise ValueError(f"{source}: grad_factor must be a finite number, got {grad_factor}")
    mix = mix if mix is not None else ScalarMix()
    layers = [layers_source, GradFactor(grad_factor), mix, ElmoDropout(dropout)]
    if width is not None:
        layers.append(with_array(Linear(nO=width)))
    model: Model[List, List[Floats2d]] = chain(*layers)
    model.set_ref("listener", layers_source)
    model.set_ref("grad_factor", layers[1])
    model.set_ref("mix", mix)
    model.set_ref("dropout", layers[3])
    if width is not None:
        model.set_dim("nO", width)
    model.attrs["elmo_listener"] = True
    model.init = _init_mix_chain
    model._func = _mix_chain_forward
    return model


def _mix_chain_forward(model: Model, X: List[Doc], is_train: bool) -> Tuple[List[Floats2d], Callable]:
    """thinc's chain, after checking that the projection has weights: called before `initialize`,
    thinc's Linear would fail with a KeyError about an unallocated parameter 'W'."""
    for layer in model.layers[4:]:
        for node in layer.walk():
            if any(not node.has_param(name) for name in node.param_names):
                source = "ElmoListener" if isinstance(model.layers[0], ElmoListenerLayer) else "ElmoStandalone"
                raise ValueError(
                    f"{source}: not initialized (the projection to width {model.get_dim('nO')} has no weights "
                    "yet): call nlp.initialize() first, or model.initialize(X=docs) for the model on its own"
                )
    return chain_forward(model, X, is_train)


def _init_mix_chain(model: Model, X: Optional[List[Doc]] = None, Y: Optional[List[Floats2d]] = None) -> Model:
    """Run the layers' source once so the mix and projection see real shapes."""
    source = model.layers[0]
    if X is None:
        chain_init(model, X=X, Y=Y)
        return model
    source.initialize(X=X)
    layers, _ = source(X, is_train=False)
    mix = model.get_ref("mix")
    mix.initialize(X=layers)
    mixed, _ = mix(layers, is_train=False)
    projection = model.layers[4:]
    for layer in projection:
        layer.initialize(X=mixed)
    if model.maybe_get_dim("nO") is None:
        model.set_dim("nO", (projection[-1] if projection else source).get_dim("nO"))
    return model


__all__ = [
    "DROPOUT_ATTR", "INITIALIZED_WIDTH", "ElmoDropout", "ElmoListener", "ElmoListenerLayer", "GradFactor", "mix_chain",
]
