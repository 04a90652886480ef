"""A small random biLM with a word table (x = projection([highway(char CNN); v(w)])), shared by
the tests of the token encoder, its vocabulary and cache, and the weight formats."""
from typing import Any, Dict

import torch

from spacy_elmo.bilm.config import BiLMConfig
from spacy_elmo.bilm.model import BiLM
from spacy_elmo.bilm.vocab import WordTableVocabulary


WORDS = ["the", "bank", "river", "money", "of"]


SENTENCES = [["The", "bank", "of", "the", "river"], ["Money", "zzz"], ["bank"]]


def table_config(**changes) -> BiLMConfig:
    settings: Dict[str, Any] = dict(
        lstm_dim=16, projection_dim=8, n_layers=2, filters=((1, 4), (2, 6)), n_highway=1,
        max_characters_per_token=12, word_table_rows=len(WORDS), word_table_dim=6, word_table_specials=3,
    )
    settings.update(changes)
    return BiLMConfig(**settings)


def table_bilm(seed: int = 0, **changes) -> BiLM:
    vocab = WordTableVocabulary(WORDS, lowercase=True)
    bilm = BiLM(table_config(**changes), word_table_vocab=vocab)
    bilm.reset_parameters(seed)
    bilm.set_word_table(torch.randn(len(WORDS), 6, generator=torch.Generator().manual_seed(seed)))
    return bilm.eval()


def layers(bilm: BiLM, sentences=SENTENCES):
    with torch.no_grad():
        return [x.numpy() for x in bilm(sentences).unpadded()]
