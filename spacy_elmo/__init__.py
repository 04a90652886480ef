"""spacy-elmo: ELMo deep contextualized word representations for spaCy 3.

    import spacy
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")          # the package's embedded English biLM
    doc = nlp("The bank of the river.")
    doc._.elmo                    # (L+1, len(doc), width) float32

The biLM itself (`spacy_elmo.bilm`) and the weight formats (`spacy_elmo.io`)
work without spaCy; the component and layers are imported on first use.
"""
from typing import Any

from .about import __version__
from .bilm import BiLM, BiLMConfig
from .io import WeightsError, load_bilm, load_model

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


__all__ = ["__version__", "BiLM", "BiLMConfig", "WeightsError", "load_bilm", "load_model", *_LAZY]
