"""Regression: fine-tuning stopped when one listening component skipped a batch.

The biLM's backward pass ran only once every listener had reported its
gradient. spaCy's NER and parser return before their backward pass when no
doc of the batch has their gold annotation, so with an NER listening beside a
tagger, on tag-only examples, the biLM never changed, while losses["elmo"]
still reported the tagger's gradient. The gradients that did arrive now go
into the biLM before the next batch or optimizer step.
"""
import numpy
import spacy
from thinc.api import SGD, fix_random_seed

from ..conftest import tagged_examples

# no dropout on the mix: the NER's initialization draws random numbers, and the masks would differ
LISTENER = {"@architectures": "spacy-elmo.ElmoListener.v1", "dropout": 0.0}
NER_MODEL = {
    "@architectures": "spacy.TransitionBasedParser.v2",
    "state_type": "ner",
    "extra_state_tokens": False,
    "hidden_width": 8,
    "maxout_pieces": 2,
    "use_upper": True,
    "tok2vec": LISTENER,
}


def _fine_tune(weights, with_ner: bool):
    fix_random_seed(0)
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(weights), "frozen": False})
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": LISTENER}})
    if with_ner:
        nlp.add_pipe("ner", config={"model": NER_MODEL})
    examples = tagged_examples(nlp)  # tags only: the NER skips every batch
    nlp.initialize(lambda: examples)
    bilm = nlp.get_pipe("elmo").bilm  # type: ignore[attr-defined]
    before = [p.detach().clone() for p in bilm.parameters()]
    # plain SGD: Adam would blow float noise in near-zero gradients up to its step size
    optimizer, losses = SGD(0.5), {}  # type: ignore[var-annotated]
    for _ in range(3):
        nlp.update(examples, sgd=optimizer, losses=losses)
    return [(p.detach() - b).numpy() for p, b in zip(bilm.parameters(), before)], losses


def test_a_skipping_listener_does_not_stop_fine_tuning(allennlp_dir):
    alone, _ = _fine_tune(allennlp_dir, with_ner=False)
    beside_ner, losses = _fine_tune(allennlp_dir, with_ner=True)
    assert losses["elmo"] > 0
    assert any(delta.any() for delta in beside_ner), "the biLM did not change"
    # the NER adds nothing, so the biLM moves as it does with the tagger alone
    for a, b in zip(alone, beside_ner):
        numpy.testing.assert_allclose(a, b, atol=1e-6, rtol=0)


def test_a_pipeline_with_a_batch_pending_pickles(allennlp_dir):
    """The last batch's gradient, held for a listener that skipped it, is not part of the pickled pipeline."""
    import pickle

    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir), "frozen": False})
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": LISTENER}})
    nlp.add_pipe("ner", config={"model": NER_MODEL})
    examples = tagged_examples(nlp)
    nlp.initialize(lambda: examples)
    nlp.update(examples, sgd=SGD(0.1))
    assert nlp.get_pipe("elmo")._pending is not None  # the NER skipped: the tagger's gradient waits
    other = pickle.loads(pickle.dumps(nlp))
    assert other.get_pipe("elmo")._pending is None
