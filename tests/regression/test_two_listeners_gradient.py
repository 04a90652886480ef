"""Regression: a fine-tuned biLM lost the gradient of a component's first-walked listener.

The `elmo` component ran the biLM's backward pass when the listener it had
registered last reported its gradient, taking that one to be the last to
backprop. A component with two listeners (ElmoTok2Vec's `elmo` and
`output_elmo`) need not backprop them in that order, and a gradient that
came after the backward pass was dropped. The backward pass now runs when
every listener has reported, whatever the order.
"""
import copy

import numpy
from thinc.api import fix_random_seed

from tests.conftest import tagger_pipeline
from tests.layers.test_tok2vec import OUTPUT_ELMO


def _bilm_grads(allennlp_dir, input_factor: float, output_factor: float) -> numpy.ndarray:
    tok2vec = copy.deepcopy(OUTPUT_ELMO)
    tok2vec["elmo"]["grad_factor"] = input_factor
    tok2vec["output_elmo"]["grad_factor"] = output_factor
    fix_random_seed(0)
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir, tok2vec=tok2vec, frozen=False)
    elmo = nlp.get_pipe("elmo")
    nlp.update(examples, sgd=optimizer)  # the tagger's output layer starts at zero: move it first
    nlp.update(examples, sgd=None)  # no optimizer: the biLM's gradients stay on its parameters
    grads = [p.grad.detach().numpy().ravel() for p in elmo.bilm.parameters() if p.grad is not None]
    assert grads, "no gradient reached the biLM"
    return numpy.concatenate(grads)


def test_both_listeners_of_a_component_reach_the_biLM(allennlp_dir):
    from_input = _bilm_grads(allennlp_dir, 1.0, 0.0)
    from_output = _bilm_grads(allennlp_dir, 0.0, 1.0)
    both = _bilm_grads(allennlp_dir, 1.0, 1.0)
    assert numpy.abs(from_input).max() > 0 and numpy.abs(from_output).max() > 0
    numpy.testing.assert_allclose(both, from_input + from_output, rtol=1e-4, atol=1e-7)


def test_a_component_with_two_listeners_updates_the_biLM_once_per_update(allennlp_dir, monkeypatch):
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir, tok2vec=OUTPUT_ELMO, frozen=False)
    elmo = nlp.get_pipe("elmo")
    calls = []
    finish = type(elmo).finish_update
    monkeypatch.setattr(type(elmo), "finish_update", lambda self, sgd: (calls.append(1), finish(self, sgd)))
    # the tagger's output layer starts at zero: the first update sends the biLM no gradient; spaCy
    # steps elmo's optimizer right after elmo's own update, so the second one's gradient moves it
    # in the third
    nlp.update(examples, sgd=optimizer)
    nlp.update(examples, sgd=optimizer)
    before = [p.detach().clone() for p in elmo.bilm.parameters()]
    nlp.update(examples, sgd=optimizer)
    assert len(calls) == 3
    assert any(not (p.detach() == b).all() for p, b in zip(elmo.bilm.parameters(), before))


def _grads_after_reports(allennlp_dir, reports) -> numpy.ndarray:
    """The biLM's gradient after its two listeners report `reports`: (listener index, scale of ones)."""
    nlp, examples, _ = tagger_pipeline(allennlp_dir, tok2vec=OUTPUT_ELMO, frozen=False)
    elmo = nlp.get_pipe("elmo")
    elmo.update(examples, sgd=None)
    listeners = elmo.listeners
    assert len(listeners) == 2
    shapes = [layers.shape for layers in listeners[0]._outputs]
    for index, scale in reports:
        listeners[index].backprop_and_clear([numpy.full(shape, scale, dtype="float32") for shape in shapes])
    return numpy.concatenate([p.grad.detach().numpy().ravel() for p in elmo.bilm.parameters() if p.grad is not None])


def test_listeners_may_report_in_any_order(allennlp_dir):
    first_then_second = _grads_after_reports(allennlp_dir, [(0, 1.0), (1, 1.0)])
    second_then_first = _grads_after_reports(allennlp_dir, [(1, 1.0), (0, 1.0)])
    all_from_one = _grads_after_reports(allennlp_dir, [(1, 0.0), (0, 2.0)])
    assert numpy.abs(first_then_second).max() > 0
    numpy.testing.assert_allclose(first_then_second, second_then_first, rtol=1e-5, atol=1e-8)
    numpy.testing.assert_allclose(first_then_second, all_from_one, rtol=1e-4, atol=1e-7)
