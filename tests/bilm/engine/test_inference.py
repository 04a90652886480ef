"""The inference shortcuts (engine/inference.py): boundary steps computed once, the same bits as the full run."""
import numpy
import pytest
import torch


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
