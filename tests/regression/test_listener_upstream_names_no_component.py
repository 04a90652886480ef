"""Regression: a listener whose `upstream` names no component of its pipeline got advice it could not
follow.

After `nlp.rename_pipe("elmo", "bilm")`, or with a typo such as `upstream = "elmo_missing"`,
prediction said the layers were "written by the elmo component 'bilm', which ran after 'elmo'
... put the components that listen to 'elmo' before 'bilm'" (there is no 'elmo'), and an update
blamed `frozen_components`. Each now says the pipeline has no component of that name and what to
set the upstream to.
"""
import pytest
import spacy

from ..conftest import tagged_examples, tagger_pipeline

NO_COMPONENT = "the pipeline has no component named '{}'"


def test_a_renamed_upstream_is_named_at_prediction(allennlp_dir):
    listener = {"@architectures": "spacy-elmo.ElmoListener.v1", "upstream": "elmo"}
    nlp, _, _ = tagger_pipeline(allennlp_dir, tok2vec=listener)
    nlp.rename_pipe("elmo", "bilm")
    with pytest.raises(ValueError, match=NO_COMPONENT.format("elmo") + r".*came from 'bilm'.*'bilm' or '\*'"):
        nlp("the dog sat")


@pytest.mark.parametrize("step", ["initialize", "update", "predict"])
def test_a_typo_is_named_at_each_step(allennlp_dir, step):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir)})
    listener = {"@architectures": "spacy-elmo.ElmoListener.v1", "upstream": "elmo_missing"}
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": listener}})
    examples = tagged_examples(nlp)
    steps = {"initialize": lambda: nlp.initialize(lambda: examples),
             "update": lambda: nlp.update(examples),
             "predict": lambda: nlp("the dog sat")}
    if step != "initialize":
        with pytest.raises(ValueError):
            steps["initialize"]()
    with pytest.raises(ValueError, match=NO_COMPONENT.format("elmo_missing")):
        steps[step]()


def test_an_upstream_placed_after_its_listener_keeps_its_own_message(allennlp_dir):
    """The name exists: the order is the problem, as before."""
    nlp = spacy.blank("en")
    listener = {"@architectures": "spacy-elmo.ElmoListener.v1", "upstream": "bilm"}
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": listener}})
    nlp.add_pipe("elmo", name="bilm", config={"weights": str(allennlp_dir)})
    with pytest.raises(ValueError, match="'bilm' must come before 'tagger'"):
        nlp.initialize(lambda: tagged_examples(nlp))
