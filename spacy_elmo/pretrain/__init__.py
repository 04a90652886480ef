"""biLM pretraining: corpus streaming, vocabulary, batching, the loop, checkpoints."""
from .text_corpus import TokenizedCorpus
from .settings import DEFAULT_CONFIG, SettingsError, load_config
from .building import build_language_model
from .trainer import Interrupted, NonFiniteError, Trainer, pretrain, run_finished

__all__ = [
    "DEFAULT_CONFIG",
    "Interrupted",
    "NonFiniteError",
    "SettingsError",
    "TokenizedCorpus",
    "Trainer",
    "build_language_model",
    "load_config",
    "pretrain",
    "run_finished",
]
