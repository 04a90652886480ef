"""Regression: `embed` calls running at once on one biLM left it in the wrong mode.

Each call saved the module's mode, put it in eval mode, and restored the saved mode when it ended.
With two calls under way (threads sharing a model, as a web server's do; or two `embed_batches`
generators) the second saved the eval mode the first had set: the first to end switched the
model back to training while the second still ran, and the last to end left it in eval mode
although the caller had put it in training mode (4 of 5 runs of the review's four threads).
Now the mode before the first call is put back when the last one ends. Two generators in one
thread make the order exact. The same holds for `LanguageModel.perplexity`.

The same generators held `torch.no_grad()` (and autocast) open across each `yield`: the caller's
loop body ran without gradients, and two generators ended out of order left gradients off for
the whole process afterwards. They now hold them around the biLM's forward pass only.
"""
import numpy
import torch

from spacy_elmo.bilm import BiLM, BiLMConfig
from spacy_elmo.bilm.engine import bulk

SIZES = dict(lstm_dim=16, projection_dim=8, n_layers=1, filters=((1, 4), (2, 4)), n_highway=1, dropout=0.5)
SENTENCES = [["the", "cat", "sat"], ["a", "dog"]]


def test_two_calls_at_once_leave_the_callers_mode():
    bilm = BiLM(BiLMConfig(**SIZES))
    bilm.reset_parameters(0)
    alone = bilm.embed(SENTENCES)
    bilm.train()  # e.g. left in training mode by fine-tuning
    first, second = (bilm.embed_batches(SENTENCES, batch_tokens=5) for _ in range(2))  # a batch each
    next(first)
    next(second)
    first.close()
    assert not bilm.training  # the second call still runs: no dropout under it
    rest = [(i, array) for indices, arrays in second for i, array in zip(indices, arrays)]
    assert rest and all(numpy.array_equal(array, alone[i]) for i, array in rest)
    assert bilm.training  # the caller's mode, once the last call has ended
    assert torch.is_grad_enabled()


def test_the_callers_loop_body_keeps_its_gradients():
    bilm = BiLM(BiLMConfig(**SIZES))
    weight = torch.ones(3, requires_grad=True)
    for _, arrays in bilm.embed_batches(SENTENCES, batch_tokens=5):
        assert torch.is_grad_enabled()
        loss = (weight * torch.from_numpy(arrays[0][0, 0, :3])).sum()
        loss.backward()  # "element 0 of tensors does not require grad" inside the old generators
    assert weight.grad is not None and torch.is_grad_enabled()


def test_nested_calls_keep_an_eval_model_in_eval_mode():
    bilm = BiLM(BiLMConfig(**SIZES))
    bilm.eval()
    with bulk.evaluating(bilm):
        with bulk.evaluating(bilm):
            assert not bilm.training
        assert not bilm.training
    assert not bilm.training and not bulk._MODE_CALLS
