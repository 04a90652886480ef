"""Regression: a pipeline with an ElmoListener could not be pickled or deep-copied into a working one.

`ElmoListenerLayer.__getstate__` returned only its `__dict__`, and thinc's
`Model` keeps its function, dims, attrs and layers in `__slots__`: the copy
had none of them. `nlp.pipe(n_process=2)` under the spawn start method (the
default on macOS and Windows), `copy.deepcopy(nlp)` and `resume_training`'s
rehearsal copy all failed with "'ElmoListenerLayer' object has no
attribute '_func'". The copy now predicts what the original predicts.
"""
import copy
import pickle

import numpy

from ..conftest import tagger_pipeline


def _scores(nlp, text="the dog sat on a mat"):
    doc = nlp(text)
    return nlp.get_pipe("tagger").model.predict([doc])[0]


def test_a_pickled_and_a_deep_copied_pipeline_predict_the_same(allennlp_dir):
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir)
    nlp.update(examples, sgd=optimizer)
    expected = _scores(nlp)
    for clone in (pickle.loads(pickle.dumps(nlp)), copy.deepcopy(nlp)):
        numpy.testing.assert_array_equal(_scores(clone), expected)
        listener, original = clone.get_pipe("elmo").listeners[0], nlp.get_pipe("elmo").listeners[0]
        assert listener.upstream_name == "*" and listener.get_dim("nO") == original.get_dim("nO")


def test_a_listener_copied_mid_batch_has_received_nothing(allennlp_dir):
    nlp, examples, _ = tagger_pipeline(allennlp_dir)
    elmo = nlp.get_pipe("elmo")
    elmo.update(examples)  # the listener holds a batch and its gradient callback
    (listener,) = elmo.listeners
    assert listener._batch_id is not None
    clone = pickle.loads(pickle.dumps(listener))
    assert clone._batch_id is None and clone._outputs is None and clone._backprop is None
    assert listener._batch_id is not None  # the original keeps its batch
