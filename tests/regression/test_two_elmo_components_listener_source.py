"""Regression: with two `elmo` components, a listener of the first read the second's layers at prediction.

Every `elmo` component writes doc._.elmo. In training a listener receives its
own upstream's layers; at prediction it read doc._.elmo whoever wrote it, so
a tagger listening to `elmo_a`, placed after `elmo_b`, was trained on one
biLM and predicted from another: silently wrong scores, or a shape error
when the widths differ. Each doc now records which component wrote its
layers, and a listener refuses another's, naming the order that works.
"""
import numpy
import pytest
import spacy

from ..conftest import tagged_examples


def _pipeline(allennlp_dir, order):
    nlp = spacy.blank("en")
    listener = {"@architectures": "spacy-elmo.ElmoListener.v1", "upstream": "elmo_a"}
    for name in order:
        if name == "tag_a":
            model = {"@architectures": "spacy.Tagger.v2", "tok2vec": listener}
            nlp.add_pipe("tagger", name="tag_a", config={"model": model})
        else:
            config = {"weights": str(allennlp_dir)}
            if name == "elmo_b":
                config["model"] = {"@architectures": "spacy-elmo.ElmoBiLM.v1", "max_length": 2, "stride": 2}
            nlp.add_pipe("elmo", name=name, config=config)
    nlp.initialize(lambda: tagged_examples(nlp))
    return nlp


def test_a_listener_placed_after_another_elmo_component_is_refused(allennlp_dir):
    nlp = _pipeline(allennlp_dir, ["elmo_a", "elmo_b", "tag_a"])
    with pytest.raises(ValueError, match="written by the elmo component 'elmo_b'.*before 'elmo_b'"):
        nlp("the cat sat on the mat")


def test_a_listener_placed_before_the_other_elmo_component_reads_its_own(allennlp_dir):
    with_b = _pipeline(allennlp_dir, ["elmo_a", "tag_a", "elmo_b"])
    alone = _pipeline(allennlp_dir, ["elmo_a", "tag_a"])
    alone.get_pipe("tag_a").from_bytes(with_b.get_pipe("tag_a").to_bytes())
    text = "the dog ran off in winter"
    doc = with_b(text)
    expected = alone(text)
    numpy.testing.assert_array_equal(with_b.get_pipe("tag_a").model.predict([expected])[0],
                                     alone.get_pipe("tag_a").model.predict([expected])[0])
    assert [t.tag_ for t in doc] == [t.tag_ for t in expected]
