"""Segments: real sentences are read whole (as the reference reads them), windows cut at sentence ends,
sentences longer than max_length read in overlapping strided windows."""
import numpy
import pytest
import spacy
from spacy.tokens import Doc

from spacy_elmo.io import load_bilm
from spacy_elmo.layers.segments import _SENTENCE_FINAL, doc_segments, split_window, strided_windows


def _sentence(n, seed=0):
    rng = numpy.random.default_rng(seed)
    words = ["the", "bank", "river", "money", "and", "of", "a", "large", "old", "house", "by", "with"]
    return [words[i] for i in rng.integers(0, len(words), n - 1)] + ["."]


def test_a_long_one_sentence_doc_is_read_whole(nlp_elmo, allennlp_dir):
    """110 tokens, no sentence boundaries: the same vectors as the biLM run on the whole sentence."""
    words = _sentence(110)
    doc = nlp_elmo(Doc(nlp_elmo.vocab, words=words))
    expected = load_bilm(allennlp_dir).embed([words])[0]
    numpy.testing.assert_allclose(doc._.elmo, expected, atol=1e-5)


def test_sentences_are_read_whole_and_separately(nlp_elmo, allennlp_dir):
    long, short = _sentence(110, seed=1), ["Second", "one", "here", "."]
    starts = [i == 0 for i in range(110)] + [True, False, False, False]
    doc = Doc(nlp_elmo.vocab, words=long + short, sent_starts=starts)
    doc = nlp_elmo(doc)
    a, b = load_bilm(allennlp_dir).embed([long, short])
    numpy.testing.assert_allclose(doc._.elmo, numpy.concatenate([a, b], axis=1), atol=1e-5)


def test_windows_pack_whole_sentences():
    texts = ["a"] * 40 + ["."] + ["b"] * 40
    assert [len(w.indices) for w in split_window(list(range(81)), texts, 64)] == [41, 40]
    texts = ["a", "."] * 10 + ["b"] * 100 + ["."]  # short sentences, then a long one
    windows = split_window(list(range(len(texts))), texts, 64)
    assert [len(w.indices) for w in windows] == [20, 101]
    assert all(w.kept == w.indices for w in windows)
    assert [len(w.indices) for w in split_window(list(range(150)), ["x"] * 150, 64)] == [150]


def test_only_sentences_longer_than_max_length_are_cut(nlp_elmo):
    windows = split_window(list(range(600)), ["x"] * 600, 64, max_length=256, stride=256)
    assert [len(w.indices) for w in windows] == [256, 256, 88]
    doc = Doc(nlp_elmo.vocab, words=["x"] * 300)
    segments = doc_segments(doc, max_window=64, max_length=256, stride=256)  # no overlap
    assert [len(s.indices) for s in segments] == [256, 44]
    assert sum((s.kept for s in segments), []) == list(range(300))  # every token in exactly one segment, in order
    segments = doc_segments(doc, max_window=64, max_length=256, stride=192)  # the default: overlapping windows
    assert [(s.indices[0], s.indices[-1] + 1, s.keep) for s in segments] == [(0, 256, (0, 150)), (44, 300, (106, 256))]
    assert sum((s.kept for s in segments), []) == list(range(300))


@pytest.mark.parametrize("n,window,stride", [(300, 256, 192), (600, 256, 192), (260, 256, 192), (20, 8, 3),
                                             (10, 4, 1), (1000, 64, 32), (97, 10, 9), (50, 64, 16)])
def test_strided_windows_keep_each_token_once_where_it_is_most_central(n, window, stride):
    windows = strided_windows(n, window, stride)
    kept = [k for (start, _), (a, b) in windows for k in range(start + a, start + b)]
    assert kept == list(range(n))  # every token once, in order
    assert windows[0][0][0] == 0 and windows[-1][0][1] == n
    for (start, end), (a, b) in windows:
        assert end - start == min(window, n)  # every window full length: the last one ends at n
        for k in range(start + a, start + b):  # no window holding k has it farther from its edges
            best = max(min(k - s, e - 1 - k) for (s, e), _ in windows if s <= k < e)
            assert min(k - start, end - 1 - k) == best
    gaps = [b[0][0] - a[0][0] for a, b in zip(windows, windows[1:])]
    assert all(g <= stride for g in gaps)


def test_stride_equal_to_max_length_is_the_plain_cut():
    assert strided_windows(600, 256, 256) == [((0, 256), (0, 256)), ((256, 512), (0, 256)), ((512, 600), (0, 88))]
    assert strided_windows(600, 256, None) == strided_windows(600, 256, 256)
    assert strided_windows(100, 256, 192) == [((0, 100), (0, 100))]


@pytest.mark.parametrize("stride", [0, 257])
def test_a_stride_outside_1_to_max_length_is_refused(stride):
    with pytest.raises(ValueError, match="stride must be between 1 and max_length"):
        spacy.blank("en").add_pipe("elmo", config={"model": {"@architectures": "spacy-elmo.ElmoBiLM.v1",
                                                             "max_length": 256, "stride": stride}})


# -- a sentence longer than max_length: overlapping windows against the whole-sentence reference --------------

N_LONG = 300
OLD_CUT = 256  # where the sentence was cut without overlap (stride = max_length = 256)


@pytest.fixture(scope="module")
def long_sentence(ewt_sentences):
    """300 tokens of consecutive EWT training sentences joined by semicolons into one sentence.

    Sentence-final punctuation would let the segmenter cut there (a sentence is read from zero
    state, as in pretraining); the semicolons leave one run that only a cut at max_length splits.
    """
    words = [";" if w in _SENTENCE_FINAL else w for sentence in ewt_sentences for w in sentence][:N_LONG]
    assert len(words) == N_LONG
    return words


def _layers(weights, words, max_length, stride):
    nlp = spacy.blank("en")
    model = {"@architectures": "spacy-elmo.ElmoBiLM.v1", "max_length": max_length, "stride": stride}
    nlp.add_pipe("elmo", config={"weights": weights, "model": model})
    doc = Doc(nlp.vocab, words=words, sent_starts=[True] + [False] * (len(words) - 1))
    return nlp(doc)._.elmo


@pytest.fixture(scope="module", params=["fixture", "embedded"])
def long_layers(request, long_sentence, allennlp_dir):
    """(name, whole-sentence reference, overlapping windows (stride 192), plain cut (stride 256))."""
    weights = str(allennlp_dir) if request.param == "fixture" else None
    whole = _layers(weights, long_sentence, 512, 512)
    doc = Doc(spacy.blank("en").vocab, words=long_sentence, sent_starts=[True] + [False] * (N_LONG - 1))
    spans = [(s.indices[0], s.indices[-1] + 1, s.keep) for s in doc_segments(doc, max_length=256, stride=192)]
    assert spans == [(0, 256, (0, 150)), (44, 300, (106, 256))]  # one run of 300 tokens: two windows
    numpy.testing.assert_array_equal(whole, load_bilm(weights).embed([long_sentence])[0])
    return request.param, whole, _layers(weights, long_sentence, 256, 192), _layers(weights, long_sentence, 256, 256)


def _error(layers, whole):
    """Per token: the largest absolute difference from the reference over layers and width."""
    return numpy.abs(layers - whole).max(axis=(0, 2))


def test_strided_windows_are_exact_where_a_window_shares_the_sentence_edge(long_layers):
    """Each window starts from zero state like the whole sentence, and the biLM is batch- and
    length-invariant, so what depends only on the same tokens is the same bits: the context-free
    layer everywhere; the forward LSTM halves of the tokens taken from the first window (it starts
    where the sentence starts); the backward halves of those from the last window (it ends where
    the sentence ends). Windows here: [0, 256) gives tokens 0-149, [44, 300) tokens 150-299."""
    _, whole, strided, _ = long_layers
    half = whole.shape[2] // 2
    numpy.testing.assert_array_equal(strided[0], whole[0])
    numpy.testing.assert_array_equal(strided[1:, :150, :half], whole[1:, :150, :half])
    numpy.testing.assert_array_equal(strided[1:, 150:, half:], whole[1:, 150:, half:])


def test_strided_windows_bring_tokens_at_the_old_cut_close_to_the_whole_sentence(long_layers):
    name, whole, strided, plain = long_layers
    near = slice(OLD_CUT - 16, OLD_CUT + 16)
    strided_err, plain_err = _error(strided, whole), _error(plain, whole)
    if name == "fixture":
        # these weights forget context within about 60 tokens, and with overlap every token is at
        # least 106 tokens from the cut edge of its window: the whole sentence within 1e-6
        assert strided_err.max() < 1e-6
        assert plain_err[near].max() > 1e-2  # without overlap, tokens at the cut lose their context
        far = numpy.r_[0:OLD_CUT - 64]  # and tokens far from that cut do not
        assert plain_err[far].max() < 1e-6
    else:
        # the trained embedded model carries context over more than 100 tokens, so no window short of
        # the sentence is within 1e-6; overlap still brings the tokens at the old cut 10x closer
        assert strided_err[near].max() * 10 < plain_err[near].max()
        assert strided_err.max() * 10 < plain_err.max()
    numpy.testing.assert_array_equal(strided[:, :150], plain[:, :150])  # both from the window [0, 256)


def test_fine_tuning_reads_the_same_overlapping_windows(allennlp_dir):
    """The fine-tuning path keeps the same positions of each window as prediction, and sends the
    gradient back only through them: the same parameter gradients as summing, window by window,
    the positions it keeps (dropout is 0 in these weights)."""
    import torch

    from tests.conftest import tagger_pipeline

    model_cfg = {"@architectures": "spacy-elmo.ElmoBiLM.v1", "max_length": 8, "stride": 5}
    nlp, _, _ = tagger_pipeline(allennlp_dir, frozen=False, elmo_config={"model": model_cfg})
    elmo = nlp.get_pipe("elmo")
    words = "the old house by the river and the bank with a large money house of the old".split() * 2
    docs = [Doc(nlp.vocab, words=words)]
    segments = doc_segments(docs[0], max_length=8, stride=5)
    assert len(segments) > 3 and any(s.kept != s.indices for s in segments)
    trained, backprop = elmo.model(docs, is_train=True)
    numpy.testing.assert_allclose(trained[0], elmo.model.predict(docs)[0], atol=1e-5)
    bilm = elmo.bilm
    bilm.zero_grad()
    backprop([numpy.ones_like(trained[0])])
    got = {name: p.grad.clone() for name, p in bilm.named_parameters() if p.grad is not None}
    bilm.zero_grad()
    total = sum(bilm([[words[i] for i in s.indices]]).unpadded()[0][:, s.keep[0] : s.keep[1]].sum() for s in segments)
    total.backward()
    assert got
    for name, grad in got.items():
        torch.testing.assert_close(grad, bilm.get_parameter(name).grad, atol=1e-4, rtol=1e-4)
