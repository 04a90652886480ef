"""The BiLM's forward and embed: output layout, boundaries, unusual tokens."""
import numpy
import torch


def test_forward_does_not_depend_on_previous_calls(allennlp_bilm):
    s = [["A", "sentence", "here", "."]]
    first = allennlp_bilm.embed(s)[0]
    allennlp_bilm.embed([["Something", "else", "entirely", "first"]] * 5)
    numpy.testing.assert_array_equal(first, allennlp_bilm.embed(s)[0])


def test_output_layout_and_empty_sentences(allennlp_bilm):
    out = allennlp_bilm.embed([["one"], [], ["two", "words"]])
    assert [o.shape for o in out] == [(3, 1, 32), (3, 0, 32), (3, 2, 32)]
    assert all(o.dtype == numpy.float32 for o in out)
    # layer 0 repeats the token vector for both directions
    numpy.testing.assert_array_equal(out[2][0, :, :16], out[2][0, :, 16:])


def test_keep_boundaries(allennlp_bilm):
    with torch.no_grad():
        inner = allennlp_bilm([["a", "b"]])
        outer = allennlp_bilm([["a", "b"]], keep_boundaries=True)
    assert outer.layers.shape[2] == inner.layers.shape[2] + 2
    torch.testing.assert_close(outer.layers[:, 0, 1:3], inner.layers[:, 0])


def test_huge_and_empty_tokens_get_ids_and_vectors(allennlp_bilm):
    out = allennlp_bilm.embed([["x" * 10_000, "", "é" * 100, "\ud800"]])[0]
    assert out.shape == (3, 4, 32) and numpy.isfinite(out).all()
