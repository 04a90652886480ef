"""Any text the tokenizer accepts gets finite vectors of the right shape.

Property-based: arbitrary Unicode tokens (controls, combining marks, emoji
sequences, whitespace, private use, unpaired surrogates at the biLM level,
where spaCy admits none), arbitrary docs, huge tokens, huge docs.
"""
import numpy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spacy.tokens import Doc

# every category, surrogates included; spaCy itself refuses surrogates, the biLM must not
ANY_CHAR = st.characters(codec=None, exclude_categories=())
SPECIAL = st.sampled_from(["", " ", "\n", "\t", "\x00", "\u200b", "e\u0301\u0301", "👩\u200d👩\u200d👧", "\ud800",
                           "\udfff", "<S>", "</S>", "x" * 10_000, "é" * 60, "\u202e", "\ufeff"])
TOKEN = st.one_of(st.text(alphabet=ANY_CHAR, max_size=80), SPECIAL)
SPACY_TOKEN = st.text(alphabet=st.characters(exclude_categories=["Cs"]), min_size=1, max_size=60) | st.sampled_from(
    [" ", "\n\n", "e\u0301", "👩\u200d👩\u200d👧", "x" * 10_000, "\t", "\u200b"]
)

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@SETTINGS
@given(st.lists(st.lists(TOKEN, max_size=30), min_size=1, max_size=6))
def test_biLM_any_unicode_tokens(bilm_rel, sentences):
    out = bilm_rel.embed(sentences)
    for sentence, layers in zip(sentences, out):
        assert layers.shape == (3, len(sentence), 32)
        assert layers.dtype == numpy.float32 and numpy.isfinite(layers).all()


@SETTINGS
@given(st.lists(SPACY_TOKEN, max_size=120), st.data())
def test_component_any_doc(nlp_rel, words, data):
    spaces = data.draw(st.lists(st.booleans(), min_size=len(words), max_size=len(words)))
    sent_starts = None
    if words and data.draw(st.booleans()):
        sent_starts = [True] + data.draw(st.lists(st.booleans(), min_size=len(words) - 1, max_size=len(words) - 1))
    doc = nlp_rel(Doc(nlp_rel.vocab, words=words, spaces=spaces, sent_starts=sent_starts))
    assert doc._.elmo.shape == (3, len(doc), 32)
    assert numpy.isfinite(doc._.elmo).all()
    for token in doc:
        assert token._.elmo.shape == (3, 32)
        if token.is_space:
            assert not token._.elmo.any()
    assert doc._.elmo_vector.shape == (32,) and numpy.isfinite(doc._.elmo_vector).all()


@SETTINGS
@given(st.text(max_size=400))
def test_component_any_text_through_the_tokenizer(nlp_rel, text):
    try:
        doc = nlp_rel.make_doc(text)
    except UnicodeEncodeError:
        return  # spaCy's tokenizer refuses lone surrogates itself
    doc = nlp_rel(doc)
    assert doc._.elmo.shape == (3, len(doc), 32) and numpy.isfinite(doc._.elmo).all()


def test_hundred_thousand_tokens_without_sentence_boundaries(nlp_rel):
    words = ["a", "long", "stream", "of", "words", "without", "any", "end"] * 12_500
    doc = nlp_rel(Doc(nlp_rel.vocab, words=words))
    assert doc._.elmo.shape == (3, 100_000, 32)
    assert numpy.isfinite(doc._.elmo).all()
    assert (numpy.abs(doc._.elmo).sum(axis=(0, 2)) > 0).all()  # every token has vectors


def test_whitespace_only_doc(nlp_rel):
    doc = nlp_rel(Doc(nlp_rel.vocab, words=["  ", "\n", "\t"], spaces=[False, False, False]))
    assert doc._.elmo.shape == (3, 3, 32) and not doc._.elmo.any()
    assert not doc._.elmo_vector.any()
