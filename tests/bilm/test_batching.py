"""`embed` and `forward`: output layout, boundaries, repeated sentences, batching by length.

That batching changes no bit is tests/regression/test_batch_invariance.py.
"""
import numpy
import pytest
import torch

from spacy_elmo.bilm import BiLM, BiLMConfig, length_sorted_batches


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


@pytest.mark.parametrize("backend", ["reference", "mkl", "onednn+kernel"])
@pytest.mark.parametrize("cached", [True, False])
def test_inference_without_boundary_steps_is_the_full_run_bit_for_bit(allennlp_dir, ewt_sentences, backend, cached):
    """Without gradients the first step (the same for every row) is computed once
    and the last (a boundary whose outputs are dropped) is skipped: same bits."""
    from spacy_elmo.bilm.engine import backends
    from spacy_elmo.io import load_bilm

    if backends.unavailable_reason(backend):
        pytest.skip(backends.unavailable_reason(backend))
    model = load_bilm(allennlp_dir)
    model.backend = backend
    if cached:
        model.enable_cache()
    sentences = [["word"], [], *ewt_sentences[:12], ["two", "words"]]
    with torch.no_grad():
        trimmed = model(sentences)
        full = model(sentences, keep_boundaries=True)
    assert trimmed.lengths.tolist() == [len(s) for s in sentences]
    for i, n in enumerate(trimmed.lengths.tolist()):
        assert torch.equal(trimmed.layers[:, i, :n], full.layers[:, i, 1 : n + 1]), i
        assert not trimmed.layers[:, i, n:].any()


def test_start_state_follows_weight_changes(allennlp_dir):
    """The state after <S>/</S> is kept between calls, and recomputed once a weight changes."""
    from spacy_elmo.io import load_bilm

    model = load_bilm(allennlp_dir)
    sentence = ["The", "bank", "."]
    before = model.embed([sentence])[0]
    assert model._start is not None
    with torch.no_grad():
        model.lstm.weight_hh[0].mul_(0.5)  # an in-place update, as an optimizer or load_state_dict makes
    changed = model.embed([sentence])[0]
    with torch.no_grad():
        full = model([sentence], keep_boundaries=True).layers[:, 0, 1:-1].numpy()
    numpy.testing.assert_array_equal(changed, full)
    assert not numpy.array_equal(changed[1], before[1])


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


def test_huge_and_empty_tokens_get_ids_and_vectors(allennlp_bilm):
    out = allennlp_bilm.embed([["x" * 10_000, "", "é" * 100, "\ud800"]])[0]
    assert out.shape == (3, 4, 32) and numpy.isfinite(out).all()


def test_length_sorted_batches_cover_everything_once():
    lengths = [5, 1, 30, 7, 7, 0, 100, 3]
    batches = list(length_sorted_batches(lengths, batch_tokens=40, max_batch_sentences=3))
    flat = sorted(i for b in batches for i in b)
    assert flat == list(range(len(lengths)))
    for b in batches:
        longest = max(lengths[i] + 2 for i in b)
        assert len(b) <= 3 and (len(b) == 1 or longest * len(b) <= 40)


def test_word_input_encoder():
    from spacy_elmo.bilm import Vocabulary

    vocab = Vocabulary(["<S>", "</S>", "<UNK>", "the", "cat"])
    config = BiLMConfig(lstm_dim=8, projection_dim=4, n_layers=1, use_character_inputs=False, n_tokens_vocab=5)
    model = BiLM(config, vocab=vocab)
    model.reset_parameters(0)
    out = model.embed([["the", "cat", "unknown"]])[0]
    assert out.shape == (2, 3, 8)
    # unknown words share the <UNK> row at layer 0
    out2 = model.embed([["the", "cat", "other"]])[0]
    numpy.testing.assert_array_equal(out[0, 2], out2[0, 2])
