"""The published fixtures: our loader must reproduce the TensorFlow biLM's numbers."""
import json

import h5py
import numpy
import pytest
import torch

from spacy_elmo.bilm.engine import backends
from spacy_elmo.io import load_bilm

# The reference tests use 1e-6, but that is the size of float32 rounding in this
# network: measured, TensorFlow's own float32 output is 1.14e-6 from the same
# network run in float64, and ours 1.35e-6. Which correct float32 kernels run
# (MKL or oneDNN, and their product heights) moves our worst case between
# 0.95e-6 and 1.19e-6.
REFERENCE_ATOL = 2e-6


def _expected(model_dir, sentences_file):
    sentences = json.loads((model_dir / sentences_file).read_text())
    files = [h5py.File(model_dir / f"lm_embeddings_{k}.hdf5", "r") for k in range(3)]
    return sentences, files


def _check_stateful(model, sentences, files):
    """10 batches of 3 in order, LSTM state carried per batch row (the reference's test)."""
    model.stateful = True
    model.reset_states()
    worst = 0.0
    with torch.no_grad():
        for b in range(10):
            batch = [sentences[k][b].split() for k in range(3)]
            out = model(batch)
            assert out.lengths.tolist() == [len(s) for s in batch]
            for k in range(3):
                n = len(batch[k])
                expected = files[k][str(b)][...]
                expected = numpy.concatenate([expected[0], expected[1]], axis=-1)  # fwd ; bwd
                got = out.layers[2, k, :n].numpy()
                worst = max(worst, float(numpy.abs(got - expected).max()))
    return worst


def _on(model, backend):
    reason = backends.unavailable_reason(backend)
    if reason:
        pytest.skip(f"backend {backend}: {reason}")
    model.backend = backend
    return model


@pytest.mark.parametrize("backend", backends.BACKENDS)
def test_allennlp_lm_embeddings_match_reference(allennlp_dir, backend):
    model = _on(load_bilm(allennlp_dir), backend)
    sentences, files = _expected(allennlp_dir, "sentences.json")
    assert _check_stateful(model, sentences, files) < REFERENCE_ATOL


@pytest.mark.parametrize("backend", backends.BACKENDS)
def test_bilm_tf_model_without_skip_connections_matches(bilm_tf_dir, backend):
    model = _on(load_bilm(bilm_tf_dir / "model"), backend)
    assert not model.config.use_skip_connections
    sentences, files = _expected(bilm_tf_dir / "model", "lm_embeddings_sentences.json")
    assert _check_stateful(model, sentences, files) < REFERENCE_ATOL


def test_state_reset_only_first_batch_matches(allennlp_dir):
    """Without carry-over only batch 0 matches: the fixture really tests the carried state."""
    model = load_bilm(allennlp_dir)
    sentences, files = _expected(allennlp_dir, "sentences.json")
    with torch.no_grad():
        for b, should_match in ((0, True), (1, False)):
            batch = [sentences[k][b].split() for k in range(3)]
            out = model(batch)
            expected = files[0][str(b)][...]
            expected = numpy.concatenate([expected[0], expected[1]], axis=-1)
            close = numpy.allclose(out.layers[2, 0, : len(batch[0])].numpy(), expected, atol=1e-6)
            assert close == should_match


def test_token_embeddings_match_reference(allennlp_dir):
    """The char CNN + highway + projection output for the reference vocabulary.

    The reference maps the literal strings <S> and </S> to the sentence-boundary
    characters; `boundary_strings=True` reproduces that.
    """
    model = load_bilm(allennlp_dir)
    words = (allennlp_dir / "vocab_test.txt").read_text().strip().split("\n")
    with h5py.File(allennlp_dir / "elmo_token_embeddings.hdf5", "r") as f:
        expected = f["embedding"][...]
    from spacy_elmo.bilm import BiLM

    parity = BiLM(model.config, boundary_strings=True)
    parity.load_state_dict(model.state_dict())
    with torch.no_grad():
        got = parity.encode_tokens(words)[2:].numpy()
    assert numpy.abs(got - expected).max() < 1e-6
    # by default the literal strings are ordinary tokens: only those two rows differ
    with torch.no_grad():
        plain = model.encode_tokens(words)[2:].numpy()
    differs = numpy.abs(plain - expected).max(axis=1) > 1e-5
    assert sorted(words[i] for i in numpy.flatnonzero(differs)) == ["</S>", "<S>"]


def test_published_weights_have_no_softmax(allennlp_dir):
    from spacy_elmo.io import WeightsError, load_model

    loaded = load_model(allennlp_dir)
    with pytest.raises(WeightsError, match="no softmax"):
        loaded.language_model()
