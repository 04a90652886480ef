"""Regression: fine-tuning the biLM kept every old parameter tensor alive, and evaluated and saved the
biLM without the optimizer's parameter averages.

1. thinc's PyTorchShim.finish_update assigns `param.data = xp2torch(updated)`, a
   tensor made from the numpy view of the previous one (whose base is that
   tensor): a chain of tensor and array objects per parameter grew by one link
   every update and was never freed. ElmoShim now updates in place; each
   parameter keeps its storage.
2. thinc's optimizer keys a PyTorch parameter as (shim id, name) but
   PyTorchShim.use_params looks for "pytorch_{id}_{name}" strings, so spaCy's
   `nlp.use_params(optimizer.averages)` (at every evaluation, and when it saves
   model-best) left the biLM at its last weights while the task layers used
   their averages. ElmoShim.use_params reads both forms and restores after.
"""
import gc

import numpy
import torch
from thinc.api import Adam, PyTorchShim

from spacy_elmo.layers.shim import ElmoShim
from tests.conftest import tagger_pipeline


def _shim(nlp) -> ElmoShim:
    shims = [s for node in nlp.get_pipe("elmo").model.walk() for s in node.shims if isinstance(s, ElmoShim)]
    assert len(shims) == 1
    return shims[0]


def _live_tensors() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, torch.Tensor))


def _linear_shim(seed: int = 0):
    torch.manual_seed(seed)
    module = torch.nn.Linear(4, 3)
    shim = ElmoShim()
    shim._model = module
    module.weight.grad = torch.full_like(module.weight, 0.5)
    module.bias.grad = torch.full_like(module.bias, -0.25)
    return shim, module


def test_an_update_keeps_the_storage_and_creates_no_lasting_objects(allennlp_dir):
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir, frozen=False)
    bilm = nlp.get_pipe("elmo").bilm
    for _ in range(2):
        nlp.update(examples, sgd=optimizer)
    storage = {name: p.data_ptr() for name, p in bilm.named_parameters()}
    before = [p.detach().clone() for p in bilm.parameters()]
    live = _live_tensors()
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    assert _live_tensors() == live  # thinc's shim left 3 more tensors per parameter here
    assert {name: p.data_ptr() for name, p in bilm.named_parameters()} == storage
    assert any(not torch.equal(a, p) for a, p in zip(before, bilm.parameters()))  # it did train


def test_the_in_place_update_equals_thincs():
    thinc_shim, thinc_module = _linear_shim()
    ours, our_module = _linear_shim()
    thinc_optimizer, our_optimizer = Adam(0.01), Adam(0.01)
    for _ in range(3):
        PyTorchShim.finish_update(thinc_shim, thinc_optimizer)
        ours.finish_update(our_optimizer)
        for module in (thinc_module, our_module):  # thinc's shim zeroes the gradients, ours drops them
            module.weight.grad = torch.full_like(module.weight, 0.5)
            module.bias.grad = torch.full_like(module.bias, -0.25)
    assert torch.equal(thinc_module.weight, our_module.weight) and torch.equal(thinc_module.bias, our_module.bias)
    assert not torch.equal(our_module.weight, _linear_shim()[1].weight)  # the update moved it


def test_use_params_puts_the_averages_in_and_takes_them_out(allennlp_dir):
    nlp, examples, _ = tagger_pipeline(allennlp_dir, frozen=False)
    optimizer = Adam(0.001, use_averages=True)  # spaCy's Adam.v1 with use_averages = true
    for _ in range(4):
        nlp.update(examples, sgd=optimizer)
    shim = _shim(nlp)
    named = dict(shim._model.named_parameters())
    averaged = {name: value for (key, name), value in optimizer.averages.items() if key == shim.id}
    assert averaged and set(averaged) <= set(named)
    last = {name: p.detach().clone() for name, p in named.items()}
    name = next(n for n in averaged if not numpy.allclose(averaged[n], last[n].numpy()))
    with nlp.use_params(optimizer.averages):
        for n, value in averaged.items():
            numpy.testing.assert_array_equal(named[n].detach().numpy(), value)
        assert [t.tag_ for t in nlp("the cat sat")]
    for n, p in named.items():
        assert torch.equal(p, last[n]), n
    assert not torch.equal(named[name], torch.from_numpy(numpy.asarray(averaged[name])))
    with shim.use_params({f"pytorch_{shim.id}_{name}": numpy.zeros_like(averaged[name])}):  # thinc's key form
        assert not named[name].detach().any()
    assert torch.equal(named[name], last[name])
