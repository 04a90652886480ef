"""spacy-elmo: ELMo deep contextualized word representations for spaCy 3.

    import spacy
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")          # the package's embedded English biLM
    doc = nlp("The bank of the river.")
    doc._.elmo                    # (L+1, len(doc), width) float32

The biLM itself (`spacy_elmo.bilm`) and the weight formats (`spacy_elmo.io`)
work without spaCy; the component and layers are imported on first use.
"""
from typing import TYPE_CHECKING, Any, List

from .about import __version__
from .bilm import BiLM, BiLMConfig
from .bilm.errors import SpacyElmoError
from .io import WeightsError, load_bilm, load_model

if TYPE_CHECKING:  # the lazy names' types, for type checkers (at run time they load on first use)
    from .layers import ElmoBiLM, ElmoListener, ElmoTok2Vec, ScalarMix  # noqa: F401
    from .pipeline import Elmo  # noqa: F401

_LAZY = {
    "Elmo": "spacy_elmo.pipeline",
    "ElmoListener": "spacy_elmo.layers",
    "ScalarMix": "spacy_elmo.layers",
    "ElmoTok2Vec": "spacy_elmo.layers",
    "ElmoBiLM": "spacy_elmo.layers",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'spacy_elmo' has no attribute {name!r}")


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = ["__version__", "BiLM", "BiLMConfig", "SpacyElmoError", "WeightsError", "load_bilm", "load_model", *_LAZY]
