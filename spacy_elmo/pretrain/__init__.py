"""biLM pretraining: corpus streaming, vocabulary, batching, the loop, checkpoints."""
from .corpus import TokenizedCorpus
from .settings import DEFAULT_CONFIG, SettingsError, load_config
from .trainer import Interrupted, Trainer, build_language_model, pretrain

__all__ = [
    "DEFAULT_CONFIG",
    "Interrupted",
    "SettingsError",
    "TokenizedCorpus",
    "Trainer",
    "build_language_model",
    "load_config",
    "pretrain",
]
