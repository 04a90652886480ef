"""ElmoListener: it never runs its upstream, clears its batch after backprop, and explains misuse."""
import numpy
import pytest
import spacy
from spacy.tokens import Doc

from spacy_elmo.layers import ElmoListener, ElmoListenerLayer
from tests.conftest import tagged_examples, tagger_pipeline


def _listener(nlp, name="tagger") -> ElmoListenerLayer:
    return next(n for n in nlp.get_pipe(name).model.walk() if isinstance(n, ElmoListenerLayer))


def test_a_disabled_elmo_does_not_run(allennlp_dir, tmp_path, biLM_calls):
    """As spaCy's listeners: a doc the upstream did not annotate gets zeros of the right shape."""
    nlp, _, _ = tagger_pipeline(allennlp_dir)
    before = biLM_calls["sentences"]
    with nlp.select_pipes(disable=["elmo"]):
        doc = nlp("the cat sat")
    assert biLM_calls["sentences"] == before, "the listener ran the disabled elmo component"
    assert doc._.elmo is None and len([t.tag_ for t in doc]) == 3
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p", disable=["elmo"])
    before = biLM_calls["sentences"]
    doc = loaded("the cat sat")
    assert biLM_calls["sentences"] == before and doc._.elmo is None
    layers, _ = _listener(loaded)([loaded.make_doc("a b")], is_train=False)
    assert layers[0].shape == (3, 2, 32) and not layers[0].any()


def test_listener_with_defaults_trains_and_clears_its_batch_after_backprop(allennlp_dir):
    """A tagger whose tok2vec is `ElmoListener.v1` with no settings learns and annotates."""
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir)
    listener = _listener(nlp)
    losses: dict = {}
    for _ in range(3):
        nlp.update(examples, sgd=optimizer, losses=losses)
        assert listener._batch_id is None and listener._outputs is None and listener._backprop is None
    assert losses["tagger"] > 0
    doc = nlp("the cat sat")
    assert all(t.tag_ for t in doc) and doc._.elmo.shape == (3, 3, 32)


def test_forward_writes_no_dims():
    listener = ElmoListenerLayer("elmo")
    nlp = spacy.blank("en")
    doc = Doc(nlp.vocab, words=["a", "b"])
    doc._.elmo = numpy.ones((3, 2, 8), dtype="float32")
    outputs, _ = listener([doc], is_train=False)
    assert outputs[0].shape == (3, 2, 8)
    assert listener.maybe_get_dim("nO") is None and listener.maybe_get_dim("nL") is None


def test_training_without_the_upstream_reads_annotations_or_says_what_to_do(allennlp_dir):
    """elmo in frozen_components: the listener needs it in annotating_components too."""
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir)
    with pytest.raises(ValueError, match="annotating_components"):
        nlp.update(examples, sgd=optimizer, exclude=["elmo"])
    losses = {}
    nlp.update(tagged_examples(nlp), sgd=optimizer, exclude=["elmo"], annotates=["elmo"], losses=losses)
    assert losses["tagger"] > 0


def test_a_listening_component_updated_alone_says_what_it_needs(allennlp_dir):
    """As under `spacy debug model CONFIG tagger`, which runs no elmo upstream: the message names that."""
    nlp, examples, _ = tagger_pipeline(allennlp_dir)
    with pytest.raises(ValueError, match="debug model.*annotated by the elmo component first"):
        nlp.get_pipe("tagger").update(examples)


def test_listener_width_must_be_positive():
    with pytest.raises(ValueError, match="width must be a positive integer"):
        ElmoListener(width=0)


def test_listener_without_any_elmo_component():
    nlp = spacy.blank("en")
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2",
                                             "tok2vec": {"@architectures": "spacy-elmo.ElmoListener.v1"}}})
    with pytest.raises(ValueError, match="not linked to an elmo component.*add an 'elmo' component before it"):
        nlp.initialize(lambda: tagged_examples(nlp))


def test_listener_naming_a_missing_upstream(allennlp_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir)})
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": {
        "@architectures": "spacy-elmo.ElmoListener.v1", "upstream": "elmo2"}}})
    with pytest.raises(ValueError, match=r"upstream 'elmo2'\): the pipeline has no component named 'elmo2'"):
        nlp.initialize(lambda: tagged_examples(nlp))


def test_mix_initial_weights_must_match_the_biLM(allennlp_dir):
    """A misconfigured mix fails at initialize with a clear message, never as NaNs later."""
    mix = {"@layers": "spacy-elmo.ScalarMix.v1", "initial_weights": [0.0, 1.0]}
    with pytest.raises(ValueError, match="set up for 2 layers but the biLM gives 3"):
        tagger_pipeline(allennlp_dir, tok2vec={"@architectures": "spacy-elmo.ElmoListener.v1", "mix": mix})
