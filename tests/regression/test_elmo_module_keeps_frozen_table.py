"""Regression: `ElmoModule(requires_grad=True)` unfroze a word table its config froze.

It set `requires_grad` on every parameter of the biLM, so pretrained vectors that the config keeps
fixed (`word_table_trainable = false`) were updated by the task. The table now keeps its setting;
every other parameter trains.
"""
import dataclasses

from spacy_elmo.bilm.elmo import ElmoModule
from spacy_elmo.bilm.model import BiLM
from spacy_elmo.io import load_bilm


def test_requires_grad_trains_all_but_a_frozen_table():
    shipped = load_bilm()  # the embedded model: a GloVe table (fine-tuned, so trainable)
    config = dataclasses.replace(shipped.config, word_table_trainable=False)
    bilm = BiLM(config, word_table_vocab=shipped.word_table_vocab)
    ElmoModule(bilm, requires_grad=True)
    table = bilm.token_encoder.word_table
    assert not table.requires_grad
    assert all(p.requires_grad for p in bilm.parameters() if p is not table)
    trainable = ElmoModule(shipped, requires_grad=True)  # a trainable table trains with the rest
    assert all(p.requires_grad for p in trainable.bilm.parameters())
