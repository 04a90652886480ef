"""Regression: the training state lost the fine-tuned biLM's parameters when a shim and a model
node had the same id.

thinc numbers model nodes and shims with two counters, so in a fresh process
the elmo component's shim and its model node are both 1. The resumable
training state looked parameters up by that id alone, found the node (which
has no `bilm.*` parameters) and silently left the biLM's live values and
optimizer moments out: `--resume` of a fine-tuning run went on from the
averaged biLM. Parameters are now keyed by id and name, as thinc's optimizer
keys them. (Inside a test session the ids are already large and do not
clash by themselves, so the clash is made here.)
"""
from thinc.api import Adam

from spacy_elmo.resumable_training import live_parameters, optimizer_state, parameter_owners

from ..conftest import tagger_pipeline


def test_a_shim_sharing_its_nodes_id_keeps_its_parameters(allennlp_dir):
    nlp, examples, _ = tagger_pipeline(allennlp_dir, frozen=False)
    torch_node = nlp.get_pipe("elmo").model.layers[0]
    shim = torch_node.shims[0]
    shim.id = torch_node.id  # as in a fresh process
    optimizer = Adam(0.01, use_averages=True)
    for _ in range(3):  # the first update's gradient into the biLM is zero; the second's is applied in the third
        nlp.update(examples, sgd=optimizer)
    trained = {name for key, name in optimizer.averages if key == shim.id and name.startswith("bilm.")}
    assert trained, "the biLM did not train"

    state = optimizer_state(optimizer, parameter_owners(nlp))
    saved = {place.partition("|")[2] for place in state["mom1"]}
    assert trained <= saved
    live = {place.partition("|")[2] for place in live_parameters(nlp, optimizer)}
    assert trained <= live
