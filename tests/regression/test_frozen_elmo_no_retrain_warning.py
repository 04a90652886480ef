"""Regression: following the docs (leave `elmo` out of [training] frozen_components: its own `frozen`
setting keeps the biLM fixed) while freezing a listening tagger made `spacy train` print spaCy's W087:
"Component 'elmo' will be (re)trained, but the component 'tagger' depends on it via a listener and is
frozen ... the performance of 'tagger' will be degraded". Nothing of a frozen `elmo` is trained, and
the tagger tagged the same after training. The warning is dropped for a frozen `elmo` and kept for a
fine-tuned one, which would indeed move under the frozen tagger."""
import logging

import pytest
from spacy.errors import Warnings

from tests.conftest import tagger_pipeline


@pytest.mark.parametrize("frozen", [True, False])
def test_w087_only_for_an_elmo_that_trains(allennlp_dir, caplog, frozen):
    nlp, _, _ = tagger_pipeline(allennlp_dir, frozen=frozen)  # alive, as under spacy train
    with caplog.at_level(logging.WARNING, logger="spacy"):
        logging.getLogger("spacy").warning(Warnings.W087.format(name="elmo", listener="tagger"))
        logging.getLogger("spacy").warning(Warnings.W087.format(name="tok2vec", listener="tagger"))
    messages = [record.getMessage() for record in caplog.records]
    assert any("Component 'tok2vec'" in m for m in messages)  # other components' warnings stay
    assert any("Component 'elmo'" in m for m in messages) is not frozen
    assert nlp.get_pipe("elmo").frozen is frozen
