"""Regression: the biLM's PyTorch entry points, as a user coming from AllenNLP calls them.

A flat list of tokens (`bilm.embed(["She", "sat"])`, one sentence without the outer list) was read as
two sentences of one-character tokens, silently; an int, None or bytes token failed deep inside
(`object of type 'int' has no len()`, `'bytes' object has no attribute 'encode'`). Each is now a
TypeError saying what a sentence must be. And `torch.compile(ElmoModule(...))` failed after minutes
in Inductor (it cannot lower oneDNN's own linear); the biLM now runs eagerly inside a compiled model.
"""
import pytest
import torch

from spacy_elmo.bilm import ElmoModule

SENTENCES = [["She", "sat", "on", "the", "bank"], ["It", "rose"]]


@pytest.fixture(scope="module")
def bilm():
    from spacy_elmo import load_bilm

    return load_bilm()


@pytest.mark.parametrize("sentences, message", [
    (["She", "sat"], "each sentence must be a list of tokens (str), got str 'She': for one sentence pass [tokens]"),
    ("She sat", "sentences must be a list of sentences"),
    ([5], "each sentence must be a list of tokens (str), got int 5"),
    ([["a", 1]], "a token must be a str, got int 1"),
    ([["a"], [None]], "a token must be a str, got NoneType None"),
    ([[b"abc"]], "a token must be a str, got bytes b'abc'"),
])
def test_what_is_not_a_batch_of_token_lists_is_a_type_error(bilm, sentences, message):
    calls = {"embed": lambda: bilm.embed(sentences), "forward": lambda: bilm(sentences),
             "boundaries": lambda: bilm(sentences, keep_boundaries=True),
             "module": lambda: ElmoModule(bilm, 1, dropout=0.0).eval()(sentences)}
    for name, call in calls.items():
        with pytest.raises(TypeError) as caught:
            call()
        assert message in str(caught.value), name


def test_token_lists_of_any_sequence_type_still_work(bilm):
    as_lists = bilm.embed(SENTENCES)
    for other in (tuple(tuple(s) for s in SENTENCES), [list(s) for s in SENTENCES]):
        assert all((a == b).all() for a, b in zip(bilm.embed(other), as_lists))
    assert bilm.embed([[], []])[0].shape[1] == 0 and bilm.embed([]) == []


def test_a_compiled_elmo_module_gives_the_same_output(bilm):
    module = ElmoModule(bilm, 1, dropout=0.0).eval()
    expected = module(SENTENCES)["elmo_representations"][0]
    compiled = torch.compile(module)
    got = compiled(SENTENCES)["elmo_representations"][0]
    assert torch.equal(got, expected)
