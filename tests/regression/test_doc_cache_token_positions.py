"""Regression: the doc cache's key left out where the words sit in the doc.

The biLM skips whitespace tokens, so ["the", "\\n", "cat", "sat"] and
["the", "cat", "\\n", "sat"] give it the same words. The cache keyed a doc
on those words alone, so the second doc took the first one's layers: vectors
on its newline and zeros on "cat". The key now holds the token positions.
"""
import numpy
from spacy.tokens import Doc

from ..conftest import tagger_pipeline


def test_same_words_at_other_positions(allennlp_dir):
    nlp, _, _ = tagger_pipeline(allennlp_dir, frozen=True)
    elmo = nlp.get_pipe("elmo")
    first = Doc(nlp.vocab, words=["the", "\n", "cat", "sat"], spaces=[True, False, True, False])
    second = Doc(nlp.vocab, words=["the", "cat", "\n", "sat"], spaces=[True, False, True, False])
    elmo.model.begin_update([first])  # frozen training: into the doc cache
    cached, _ = elmo.model.begin_update([second])
    expected = elmo.model.predict([second])
    numpy.testing.assert_array_equal(cached[0], expected[0])
    assert not cached[0][:, 2].any(), "the newline must have no vectors"
    assert cached[0][:, 1].any(), "'cat' must have vectors"
