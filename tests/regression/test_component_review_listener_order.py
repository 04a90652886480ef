"""Regression: a listening component placed before `elmo` got a misleading error.

With the tagger before `elmo` in the pipeline, `nlp.initialize()` failed with
"got docs without doc._.elmo and is not linked to an elmo component: add an
'elmo' component before it ...", though the pipeline has one: the problem is
the order (spaCy links listeners only to components placed after the
upstream). Now the error says "'elmo' must come before 'tagger' in the pipeline".
"""
import pytest
import spacy

from ..conftest import tagged_examples

TAGGER = {"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": {"@architectures": "spacy-elmo.ElmoListener.v1"}}}


def test_elmo_after_the_listening_component_names_the_order(allennlp_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("tagger", config=TAGGER)
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir)})
    with pytest.raises(ValueError, match="'elmo' must come before 'tagger' in the pipeline"):
        nlp.initialize(lambda: tagged_examples(nlp))


def test_a_named_upstream_is_named(allennlp_dir):
    nlp = spacy.blank("en")
    listener = {"@architectures": "spacy-elmo.ElmoListener.v1", "upstream": "bilm"}
    tagger = {"model": {**TAGGER["model"], "tok2vec": listener}}
    nlp.add_pipe("tagger", config=tagger)
    nlp.add_pipe("elmo", name="bilm", config={"weights": str(allennlp_dir)})
    with pytest.raises(ValueError, match="'bilm' must come before 'tagger'"):
        nlp.initialize(lambda: tagged_examples(nlp))


def test_without_any_elmo_the_old_advice_stays():
    nlp = spacy.blank("en")
    nlp.add_pipe("tagger", config=TAGGER)
    with pytest.raises(ValueError, match="not linked to an elmo component: add an 'elmo' component before it"):
        nlp.initialize(lambda: tagged_examples(nlp))
