"""Regression: the frozen biLM's doc cache outlived fine-tuning steps.

thinc's optimizer writes the biLM's new weights in place, through numpy
views, which leaves the parameters' version counters (and so their
`WeightsKey`) as they were. A pipeline trained frozen (the doc cache
filled), fine-tuned for a few steps and frozen again took its layers from
the cache: those of the weights before fine-tuning. The shim now tells the
biLM after each update (`BiLM.clear_cache()`, which counts its calls in
`cache_generation`) and the doc cache is checked against that count too, so
any write followed by `clear_cache()` reaches it.
"""
import numpy
from thinc.api import Adam

from ..conftest import tagger_pipeline


def test_frozen_again_after_fine_tuning_reads_the_new_weights(allennlp_dir):
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir, frozen=True)
    elmo = nlp.get_pipe("elmo")
    docs = [eg.predicted for eg in examples]
    nlp.update(examples, sgd=optimizer)  # frozen training fills the doc cache
    assert len(elmo.model.attrs["doc_cache"]) == len(docs)
    before = [layers.copy() for layers in elmo.model.begin_update(docs)[0]]

    elmo.frozen = False
    fine_tuning = Adam(0.01)
    for _ in range(3):
        nlp.update(examples, sgd=fine_tuning)
    elmo.frozen = True

    cached, _ = elmo.model.begin_update(docs)  # frozen and training: the doc cache's path
    predicted = elmo.model.predict(docs)
    assert not all(numpy.array_equal(a, b) for a, b in zip(cached, before)), "fine-tuning changed nothing"
    for a, b in zip(cached, predicted):
        numpy.testing.assert_allclose(a, b, atol=1e-5, rtol=0)


def test_each_update_counts(allennlp_dir):
    nlp, examples, _ = tagger_pipeline(allennlp_dir, frozen=False)
    bilm = nlp.get_pipe("elmo").model.layers[0].shims[0].bilm
    start = bilm.cache_generation
    optimizer = Adam(0.01)
    nlp.update(examples, sgd=optimizer)  # the biLM's gradient is applied at the next update
    nlp.update(examples, sgd=optimizer)
    assert bilm.cache_generation > start


def test_a_write_through_data_then_clear_cache_reaches_the_doc_cache(allennlp_dir):
    # writes through `parameter.data` leave the version counters alone; the contract
    # (bilm/engine/weights_key.py) is to call clear_cache() after them
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir, frozen=True)
    elmo = nlp.get_pipe("elmo")
    docs = [eg.predicted for eg in examples]
    nlp.update(examples, sgd=optimizer)
    assert len(elmo.model.attrs["doc_cache"]) == len(docs)
    bilm = elmo.model.layers[0].shims[0].bilm
    before = [layers.copy() for layers in elmo.model.begin_update(docs)[0]]
    for param in bilm.lstm.parameters():
        param.data.mul_(0.5)
    bilm.clear_cache()
    cached, _ = elmo.model.begin_update(docs)
    assert not all(numpy.array_equal(a, b) for a, b in zip(cached, before)), "the write changed nothing"
    for a, b in zip(cached, elmo.model.predict(docs)):
        numpy.testing.assert_allclose(a, b, atol=1e-5, rtol=0)
