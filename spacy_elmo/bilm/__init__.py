"""The biLM in pure PyTorch, no spaCy: the model in this package's modules, its speed paths in `engine/`
(docs/internals.md draws both)."""
from .char_ids import CharDictionary, CharIdEncoder, batch_to_ids, token_to_char_ids
from .config import BiLMConfig, OptionsError
from .elmo import ElmoModule, TorchScalarMix
from .engine import BACKENDS, BackendError
from .engine.token_cache import TokenCache
from .lstm import BiLSTMStack, LSTMState, TokenRows
from .model import BiLM, BiLMOutput, length_sorted_batches
from .token_encoder import CharCNNEncoder, WordEncoder
from .vocab import Vocabulary

__all__ = ["BACKENDS", "BackendError", "BiLM", "BiLMOutput", "BiLMConfig", "BiLSTMStack", "CharCNNEncoder",
           "CharDictionary", "CharIdEncoder", "ElmoModule", "LSTMState", "OptionsError", "TokenCache", "TorchScalarMix",
           "TokenRows", "Vocabulary", "WordEncoder", "batch_to_ids", "length_sorted_batches", "token_to_char_ids"]
