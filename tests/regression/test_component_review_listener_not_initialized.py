"""Regression: a listener with a projection, called before initialize, failed inside thinc.

`ElmoListener(width=8).predict([doc])` before `initialize` raised thinc's
`KeyError: "Parameter 'W' for model 'linear' has not been allocated yet."`,
which names neither the listener nor the remedy. Now it is a one-line
ValueError saying to initialize first (thinc's convention: layers with
weights are initialized explicitly; only the ScalarMix, which has a neutral
start, sets itself up from the first batch).
"""
import pytest

from spacy_elmo.layers.listener import ElmoListener


def test_predict_before_initialize_says_so(nlp_elmo):
    doc = nlp_elmo("the cat sat")
    with pytest.raises(ValueError, match=r"ElmoListener: not initialized .*nlp\.initialize\(\)"):
        ElmoListener(width=8).predict([doc])


def test_after_initialize_it_predicts(nlp_elmo):
    doc = nlp_elmo("the cat sat")
    listener = ElmoListener(width=8)
    listener.initialize(X=[doc])
    assert listener.predict([doc])[0].shape == (3, 8)


def test_without_a_projection_no_initialize_is_needed(nlp_elmo):
    doc = nlp_elmo("the cat sat")
    assert ElmoListener().predict([doc])[0].shape == (3, 32)
