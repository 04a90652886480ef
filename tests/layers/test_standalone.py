"""replace_listeners: a component gets its own biLM that saves, loads and tags as the listener did."""
import numpy
import pytest
import spacy

from tests.conftest import tagger_pipeline

COMPOSITE = {
    "@architectures": "spacy-elmo.ElmoTok2Vec.v1",
    "width": 32,
    "elmo": {"@architectures": "spacy-elmo.ElmoListener.v1", "width": 16,
             "mix": {"@layers": "spacy-elmo.ScalarMix.v1", "layer_norm": True}},
    "embed": {"@architectures": "spacy.MultiHashEmbed.v2", "width": 32, "attrs": ["NORM", "SHAPE"],
              "rows": [500, 50], "include_static_vectors": False},
    "encode": {"@architectures": "spacy.MaxoutWindowEncoder.v2", "width": 32, "depth": 1,
               "window_size": 1, "maxout_pieces": 2},
}
TEXTS = ["the cat sat on the mat", "birds fly south", "a dog"]


def _scores(nlp):
    docs = [nlp.make_doc(t) for t in TEXTS]
    if "elmo" in nlp.pipe_names:
        docs = list(nlp.get_pipe("elmo").pipe(docs))
    return [numpy.asarray(s) for s in nlp.get_pipe("tagger").model.predict(docs)]


@pytest.mark.parametrize("tok2vec", [None, COMPOSITE], ids=["listener", "composite"])
def test_replace_listeners_then_save_and_load(allennlp_dir, tmp_path, tok2vec):
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir, tok2vec=tok2vec)
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    before = _scores(nlp)
    nlp.replace_listeners("elmo", "tagger", ["model.tok2vec"])
    assert not nlp.get_pipe("elmo").listeners
    config = nlp.config["components"]["tagger"]["model"]["tok2vec"]
    block = config if tok2vec is None else config["elmo"]
    assert block["@architectures"] == "spacy-elmo.ElmoStandalone.v1"
    assert block["bilm"]["@architectures"] == "spacy-elmo.ElmoBiLM.v1"
    for a, b in zip(before, _scores(nlp)):
        numpy.testing.assert_allclose(a, b, atol=1e-6)
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    for a, b in zip(before, _scores(loaded)):
        numpy.testing.assert_allclose(a, b, atol=1e-6)
    # the tagger stands alone now: it tags the same without the elmo component
    loaded.remove_pipe("elmo")
    for a, b in zip(before, _scores(loaded)):
        numpy.testing.assert_allclose(a, b, atol=1e-6)
    assert [t.tag_ for t in loaded(TEXTS[0])] == [t.tag_ for t in nlp(TEXTS[0])]


def test_unfreezing_the_component_reaches_the_standalone_config(allennlp_dir):
    """`elmo.frozen = False` (what scripts/finetune.py sets) is the setting, the forward pass's attr
    and what replace_listeners writes into the component's config, all at once."""
    nlp, _, _ = tagger_pipeline(allennlp_dir)
    elmo = nlp.get_pipe("elmo")
    elmo.frozen = False
    assert elmo.cfg["frozen"] is False and elmo.model.attrs["frozen"] is False and elmo.is_trainable
    nlp.replace_listeners("elmo", "tagger", ["model.tok2vec"])
    assert nlp.config["components"]["tagger"]["model"]["tok2vec"]["frozen"] is False
