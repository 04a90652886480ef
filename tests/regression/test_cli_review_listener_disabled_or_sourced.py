"""Regression: two listener errors named the wrong cause.

With `elmo` disabled while the pipeline was initialized (`select_pipes(disable=["elmo"])`, or
`[training] frozen_components = ["elmo"]`, which spaCy disables during `initialize`), the listener
said "the pipeline has no component named 'elmo'" (disabled components are not in `pipe_names`).
And with `elmo` sourced into a new pipeline under another name (`add_pipe("elmo", name="bilm",
source=src)`), prediction said "written by the elmo component 'bilm', which ran after 'elmo'":
the only pipeline known was the source, whose names are not the new pipeline's.
"""
import pytest
import spacy

from ..conftest import tagged_examples, tagger_pipeline


def test_a_disabled_elmo_is_named_disabled_at_initialize(allennlp_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir)})
    listener = {"@architectures": "spacy-elmo.ElmoListener.v1", "upstream": "elmo"}
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": listener}})
    examples = tagged_examples(nlp)
    with nlp.select_pipes(disable=["elmo"]):
        with pytest.raises(ValueError) as caught:
            nlp.initialize(lambda: examples)
    message = str(caught.value)
    assert "the elmo component 'elmo' is disabled" in message and "frozen_components" in message
    assert "no component named" not in message


def test_an_elmo_sourced_under_another_name_gets_both_remedies(allennlp_dir):
    source, _, _ = tagger_pipeline(allennlp_dir, tok2vec={"@architectures": "spacy-elmo.ElmoListener.v1",
                                                          "upstream": "elmo"})
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", name="bilm", source=source)
    nlp.add_pipe("tagger", source=source)
    with pytest.raises(ValueError) as caught:
        nlp("the dog sat")
    message = str(caught.value)
    assert "written by the elmo component 'bilm', not by 'elmo'" in message
    assert "set the listener's upstream to 'bilm' or '*'" in message and "ran after" not in message
