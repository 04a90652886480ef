"""thinc layers: the biLM over Docs, the scalar mix, the listener, composite tok2vecs."""
from .bilm_model import ElmoBiLM, get_bilm, predict_layers, set_bilm
from .listener import ElmoListener, ElmoListenerLayer
from .scalar_mix import ScalarMix, mix_weights
from .tok2vec import ElmoTok2Vec

__all__ = [
    "ElmoBiLM",
    "ElmoListener",
    "ElmoListenerLayer",
    "ElmoTok2Vec",
    "ScalarMix",
    "get_bilm",
    "mix_weights",
    "predict_layers",
    "set_bilm",
]
