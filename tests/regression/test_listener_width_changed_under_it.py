"""Regression: a saved pipeline whose `elmo` biLM was replaced by one of another width loaded
silently, then failed at the first prediction or update with thinc's "Shape mismatch for
blis.gemm: (3, 256), (32, 5)", naming neither the listener nor the cause.

Linking took the new width over the listener's saved one. The listener now keeps the width its
component was initialized on (saved with it) and refuses other layers with one message.
"""
import shutil

import pytest
import spacy

from ..conftest import tagged_examples, tagger_pipeline

WIDER = "gives layers of width 256, but the component listening to it was initialized on width 32"


@pytest.fixture
def swapped(allennlp_dir, tmp_path):
    """A tagger pipeline saved on the 32-wide reference biLM, its elmo model file then replaced by the
    embedded 256-wide one."""
    nlp, _, _ = tagger_pipeline(allennlp_dir)
    nlp.to_disk(tmp_path / "pipeline")
    other = spacy.blank("en")
    other.add_pipe("elmo")
    other.to_disk(tmp_path / "other")
    shutil.copy(tmp_path / "other" / "elmo" / "model", tmp_path / "pipeline" / "elmo" / "model")
    return spacy.load(tmp_path / "pipeline")


def test_prediction_and_update_name_the_two_widths(swapped):
    with pytest.raises(ValueError, match=WIDER):
        swapped("the dog sat")
    optimizer = swapped.resume_training()
    with pytest.raises(ValueError, match=WIDER):
        swapped.update(tagged_examples(swapped), sgd=optimizer)


def test_the_width_is_saved_with_the_listener(allennlp_dir, tmp_path):
    nlp, _, _ = tagger_pipeline(allennlp_dir)
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    listener = next(node for node in loaded.get_pipe("tagger").model.walk() if node.name == "elmo-listener")
    assert listener.attrs["initialized_width"] == 32
