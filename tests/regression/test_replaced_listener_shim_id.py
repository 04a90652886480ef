"""Regression: the biLM `replace_listeners` gives a component shared its shim id with the original.

thinc copies a shim with `copy.deepcopy`, id included, and its optimizer keys
a shim's parameters, their Adam moments and their averages by (shim id,
parameter name). The tagger's own copy of the biLM and the `elmo`
component's biLM therefore had one id, and would have shared that state when
both trained. A copied `ElmoShim` now takes an id of its own.
"""
from thinc.api import Adam

from ..conftest import tagger_pipeline


def _torch_shims(model):
    return [shim for node in model.walk() for shim in node.shims]


def test_the_copy_has_its_own_id_and_optimizer_state(allennlp_dir):
    nlp, examples, _ = tagger_pipeline(allennlp_dir, frozen=False)
    nlp.replace_listeners("elmo", "tagger", ["model.tok2vec"])
    (original,) = _torch_shims(nlp.get_pipe("elmo").model)
    (copied,) = _torch_shims(nlp.get_pipe("tagger").model)
    assert copied.id != original.id
    assert copied._model is not original._model

    optimizer = Adam(0.01)
    nlp.update(examples, sgd=optimizer)
    nlp.update(examples, sgd=optimizer)  # the tagger's biLM's gradient is applied at its next update
    trained = {key[0] for key in optimizer.mom1 if isinstance(key, tuple)}
    assert copied.id in trained
    assert original.id not in trained  # nothing listens to elmo now: its biLM does not train
