"""`spacy-elmo.ElmoStandalone.v1` and what spaCy's `replace_listeners` needs.

`nlp.replace_listeners("elmo", "tagger", ["model.tok2vec"])` gives the
tagger its own copy of the biLM in place of its listener, so that it no
longer depends on the `elmo` component (e.g. to freeze it while `elmo` goes
on training, or to ship it alone). spaCy does two things, both through
functions the `elmo` model carries in its attrs (as spacy-transformers does):

* in the model, `replace_listener` gives the node that replaces the listener
  layer: a copy of the biLM model, keeping the component's `frozen` setting;
  the listener's mix and projection stay where they are;
* in the config, `replace_listener_cfg` rewrites the listener's block (also
  one nested inside `spacy-elmo.ElmoTok2Vec.v1`) into an
  `ElmoStandalone.v1` block that builds the same structure: the biLM, the
  same mix, dropout, grad factor and projection. The saved pipeline
  therefore loads and tags the same.
"""
import copy
from typing import Any, Dict, List, Optional

from spacy.util import registry
from thinc.api import Model
from thinc.types import Floats2d, Floats3d

from .. import defaults
from .config_value import ConfigValue, decided_by_config
from .listener import DEFAULT_DROPOUT, mix_chain
from .bilm_model import drop_bilm
from .loaders import LOADER_ATTR, ensure_weights, resolve_loader

LISTENER = "spacy-elmo.ElmoListener.v1"
STANDALONE = "spacy-elmo.ElmoStandalone.v1"


@registry.architectures(STANDALONE)
def ElmoStandalone(
    bilm: Model[List, List[Floats3d]],
    width: Optional[int] = None,
    mix: Optional[Model[List[Floats3d], List[Floats2d]]] = None,
    frozen: bool = True,
    dropout: float = DEFAULT_DROPOUT,
    grad_factor: float = 1.0,
    weights: Optional[str] = None,
) -> Model[List, List[Floats2d]]:
    """A component's own biLM and mix: what a listener becomes after `replace_listeners`.

    bilm: a `spacy-elmo.ElmoBiLM.v1` model.
    width, mix, dropout: as for `spacy-elmo.ElmoListener.v1`.
    frozen: keep the biLM's weights fixed while the owning component trains.
    grad_factor: factor on the gradient into this biLM when it is not frozen
        (as the listener's factor on the gradient into the elmo component).
    weights: the model that fills the biLM when it is built from this config
        alone (as the elmo component's `weights`; null: the embedded English
        biLM). A saved pipeline carries its own copy and never reads it.
    """
    bilm.attrs["frozen"] = ConfigValue(bool(frozen))  # the config decides, also over a saved pipeline
    # and so do the biLM's own settings (backend, max_length...): the elmo component restores them itself
    # after loading; this copy of its model has no component to do it
    decided_by_config(bilm, defaults.model_settings())
    if weights is not None:
        bilm.attrs[LOADER_ATTR] = resolve_loader(weights)  # read on first use, unless loaded from disk
        if bilm.attrs.get("fresh"):
            drop_bilm(bilm)  # explicit weights win over sizes in the model block
    return mix_chain(bilm, width, mix, source="ElmoStandalone", dropout=dropout, grad_factor=grad_factor)


def replace_listener(model: Model, listener: Model, component: Any) -> Model:
    """The node put in the listener's place: `model`, a copy of the component's biLM model.

    The copy keeps the component's loader (in its attrs): a biLM the
    component had not loaded yet is loaded into the copy now, so that it owns
    its weights.
    """
    model.attrs["frozen"] = component.frozen
    ensure_weights(model)
    return model


def replace_listener_cfg(
    bilm_cfg: Dict[str, Any], listener_cfg: Dict[str, Any], frozen: bool = True, weights: Optional[str] = None
) -> Dict[str, Any]:
    """The listener's config block, with each listener in it replaced by a standalone block.

    `weights` names the model the component's biLM came from (its `weights`,
    or what its [initialize] loader read), so that the block builds the same
    biLM from the config alone.
    """
    if listener_cfg.get("@architectures") == LISTENER:
        return {
            "@architectures": STANDALONE,
            "bilm": copy.deepcopy(dict(bilm_cfg)),
            "width": listener_cfg.get("width"),
            "mix": copy.deepcopy(listener_cfg.get("mix")),
            "frozen": frozen,
            "dropout": listener_cfg.get("dropout", DEFAULT_DROPOUT),
            "grad_factor": listener_cfg.get("grad_factor", 1.0),
            "weights": weights,
        }
    result = dict(listener_cfg)
    for key, value in listener_cfg.items():
        if isinstance(value, dict):
            result[key] = replace_listener_cfg(bilm_cfg, value, frozen, weights)
    return result


__all__ = ["ElmoStandalone", "replace_listener", "replace_listener_cfg"]
