"""Bulk embedding (engine/bulk.py): repeated sentences, batching by length.

That batching changes no bit is tests/regression/test_batch_invariance.py.
"""
import numpy
import pytest

from spacy_elmo.bilm import layout, length_sorted_batches


def test_repeated_sentences_are_computed_once_and_each_gets_its_own_array(allennlp_bilm, ewt_sentences, monkeypatch):
    sentences = ewt_sentences[:6]
    repeated = [sentences[0], sentences[1], [], sentences[0], list(sentences[1]), sentences[2], sentences[0], []]
    computed = []
    forward = type(allennlp_bilm).forward

    def counting_forward(batch, *args, **kwargs):
        computed.extend(tuple(s) for s in batch)
        return forward(allennlp_bilm, batch, *args, **kwargs)

    monkeypatch.setattr(allennlp_bilm, "forward", counting_forward)
    out = allennlp_bilm.embed(repeated)
    assert sorted(computed) == sorted({tuple(s) for s in repeated if s})
    alone = [allennlp_bilm.embed([s])[0] for s in repeated]
    for got, expected in zip(out, alone):
        numpy.testing.assert_array_equal(got, expected)
    assert out[0] is not out[3] and out[3] is not out[6] and out[1] is not out[4]
    out[3][:] = 0.0  # writing into one occurrence leaves the others alone
    assert out[0].any() and out[6].any()


def test_embed_checks_its_input_once_not_again_per_batch(allennlp_bilm, ewt_sentences, monkeypatch):
    """Each token's type is tested once per `embed`: the batches' forwards get sentences already checked
    (a second check per batch cost about 110 ns a token), and a bad token is still found before any work."""
    tested = []
    isinstance_ = isinstance

    def counting_isinstance(obj, types):
        if types is str:
            tested.append(obj)
        return isinstance_(obj, types)

    monkeypatch.setitem(layout.check_sentences.__globals__, "isinstance", counting_isinstance)
    sentences = [list(s) for s in ewt_sentences[:40]]
    out = allennlp_bilm.embed(sentences, batch_tokens=64)
    assert [len(a[0]) for a in out] == [len(s) for s in sentences]
    assert len(tested) == sum(len(s) for s in sentences)
    forward_call = allennlp_bilm([sentences[0]])  # a direct call is still checked
    assert forward_call.layers.shape[2] == len(sentences[0])
    with pytest.raises(TypeError, match="a token must be a str"):
        allennlp_bilm.embed(sentences + [["fine", 3]])


def test_length_sorted_batches_cover_everything_once():
    lengths = [5, 1, 30, 7, 7, 0, 100, 3]
    batches = list(length_sorted_batches(lengths, batch_tokens=40, max_batch_sentences=3))
    flat = sorted(i for b in batches for i in b)
    assert flat == list(range(len(lengths)))
    for b in batches:
        longest = max(lengths[i] + 2 for i in b)
        assert len(b) <= 3 and (len(b) == 1 or longest * len(b) <= 40)
