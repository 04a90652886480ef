"""thinc layers: the biLM over Docs, the scalar mix, the listener, composite tok2vecs, loaders."""
from .bilm_model import ElmoBiLM, ElmoNotReady, get_bilm, predict_layers, set_bilm
from .listener import ElmoListener, ElmoListenerLayer
from .loaders import EmbeddedLoader, NativeLoader, PublishedLoader, SourceLoader, resolve_loader
from .scalar_mix import ScalarMix, mix_weights
from .standalone import ElmoStandalone
from .tok2vec import ElmoTok2Vec

__all__ = [
    "ElmoBiLM",
    "ElmoListener",
    "ElmoListenerLayer",
    "ElmoNotReady",
    "ElmoStandalone",
    "ElmoTok2Vec",
    "EmbeddedLoader",
    "NativeLoader",
    "PublishedLoader",
    "ScalarMix",
    "SourceLoader",
    "get_bilm",
    "mix_weights",
    "predict_layers",
    "resolve_loader",
    "set_bilm",
]
