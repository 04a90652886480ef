"""Regression: a native model whose vocabulary and softmax disagree loaded, then `perplexity` crashed.

`load_native` built the softmax from elmo.json without comparing it with
vocab.txt (a file edited or swapped, its checksum entry gone) or with the
biLM's projection_dim (an elmo.json and softmax written by hand), so the
model loaded and the mismatch surfaced as a ValueError traceback when
`perplexity` built the language model. Loading now refuses it with one
WeightsError naming the files.
"""
import json

import pytest

from spacy_elmo.bilm.language_model import SoftmaxHead
from spacy_elmo.bilm.vocab import Vocabulary
from spacy_elmo.io import WeightsError, load_model, save_native

from ..cli.invoke import refused
from ..io.model_server import tiny_bilm

WORDS = ["<S>", "</S>", "<UNK>", "the", "cat", "sat"]


def _native(directory, dim=4):
    head = SoftmaxHead(len(WORDS), dim, "full")
    head.reset_parameters()
    return save_native(directory, tiny_bilm(7), Vocabulary(WORDS), head)


def _drop_checksum(directory, name):
    meta = json.loads((directory / "elmo.json").read_text())
    del meta["sha256"][name]
    (directory / "elmo.json").write_text(json.dumps(meta))


def test_a_vocabulary_shorter_than_the_softmax(tmp_path):
    directory = _native(tmp_path / "m")
    _drop_checksum(directory, "vocab.txt")
    (directory / "vocab.txt").write_text("\n".join(WORDS[:-1]) + "\n")
    with pytest.raises(WeightsError, match="the softmax has 6 classes but .*vocab.txt holds 5 words"):
        load_model(directory)
    load_model(directory, with_softmax=False)  # embedding does not need the softmax
    text = tmp_path / "text.txt"
    text.write_text("the cat sat\n")
    refused(["perplexity", directory, text, "--tokenizer", "whitespace"], "6 classes", "5 words")


def test_a_softmax_that_does_not_read_the_projection(tmp_path):
    directory = _native(tmp_path / "m", dim=8)  # the tiny biLM's projection_dim is 4
    with pytest.raises(WeightsError, match="reads vectors of 8 values but the biLM's projection_dim is 4"):
        load_model(directory)
    text = tmp_path / "text.txt"
    text.write_text("the cat sat\n")
    refused(["perplexity", directory, text, "--tokenizer", "whitespace"], "projection_dim is 4")
