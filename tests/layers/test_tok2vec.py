"""ElmoTok2Vec: the ELMo mix concatenated with the task's own features, projected, then encoded."""
from typing import Any, Dict

import numpy
import pytest
import spacy
from spacy.ml.models.tok2vec import MaxoutWindowEncoder

from spacy_elmo.layers import ElmoListener, ElmoTok2Vec
from tests.conftest import tagger_pipeline


def test_encoder_width_must_equal_width():
    encoder = MaxoutWindowEncoder(width=64, window_size=1, maxout_pieces=3, depth=1)
    with pytest.raises(ValueError, match="encoder's width \\(64\\) differs from width = 32"):
        ElmoTok2Vec(ElmoListener(), width=32, encode=encoder)


def test_output_width_with_embed_and_encoder(allennlp_dir):
    tok2vec = {
        "@architectures": "spacy-elmo.ElmoTok2Vec.v1",
        "width": 24,
        "elmo": {"@architectures": "spacy-elmo.ElmoListener.v1"},
        "embed": {"@architectures": "spacy.MultiHashEmbed.v2", "width": 24, "attrs": ["NORM"], "rows": [100],
                  "include_static_vectors": False},
        "encode": {"@architectures": "spacy.MaxoutWindowEncoder.v2", "width": 24, "depth": 1, "window_size": 1,
                   "maxout_pieces": 2},
    }
    nlp, _, _ = tagger_pipeline(allennlp_dir, tok2vec=tok2vec)
    docs = list(nlp.get_pipe("elmo").pipe([nlp.make_doc("one two three")]))
    vectors = nlp.get_pipe("tagger").model.get_ref("tok2vec").predict(docs)
    assert vectors[0].shape == (3, 24)


OUTPUT_ELMO: Dict[str, Any] = {
    "@architectures": "spacy-elmo.ElmoTok2Vec.v1",
    "width": 24,
    "elmo": {"@architectures": "spacy-elmo.ElmoListener.v1", "dropout": 0.0},
    "embed": {"@architectures": "spacy.MultiHashEmbed.v2", "width": 24, "attrs": ["NORM"], "rows": [100],
              "include_static_vectors": False},
    "encode": {"@architectures": "spacy.MaxoutWindowEncoder.v2", "width": 24, "depth": 1, "window_size": 1,
               "maxout_pieces": 2},
    "output_elmo": {"@architectures": "spacy-elmo.ElmoListener.v1", "dropout": 0.0},
}


def _tag_scores(nlp, texts):
    docs = list(nlp.get_pipe("elmo").pipe([nlp.make_doc(t) for t in texts])) if "elmo" in nlp.pipe_names \
        else [nlp.make_doc(t) for t in texts]
    return [numpy.asarray(s) for s in nlp.get_pipe("tagger").model.predict(docs)]


def test_output_elmo_is_a_second_listener_concatenated_after_the_encoder(allennlp_dir):
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir, tok2vec=OUTPUT_ELMO)
    elmo = nlp.get_pipe("elmo")
    assert len(elmo.listener_map["tagger"]) == 2
    tok2vec = nlp.get_pipe("tagger").model.get_ref("tok2vec")
    docs = list(elmo.pipe([nlp.make_doc("one two three")]))
    vectors = tok2vec.predict(docs)
    bilm_width = docs[0]._.elmo.shape[-1]
    assert vectors[0].shape == (3, 24 + bilm_width)
    # the last columns are the output listener's own mix of the layers, nothing else
    output_mix = tok2vec.get_ref("output_elmo")
    numpy.testing.assert_array_equal(vectors[0][:, 24:], output_mix.predict(docs)[0])
    mix_before = output_mix.get_ref("mix").get_param("s").copy()
    losses = {}
    for _ in range(5):
        nlp.update(examples, sgd=optimizer, losses=losses)
    # both mixes learn, each its own weights
    assert not numpy.array_equal(output_mix.get_ref("mix").get_param("s"), mix_before)
    assert not numpy.array_equal(output_mix.get_ref("mix").get_param("s"),
                                 tok2vec.get_ref("elmo").get_ref("mix").get_param("s"))


def test_output_elmo_round_trips_and_replaces_both_listeners(allennlp_dir, tmp_path):
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir, tok2vec=OUTPUT_ELMO)
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    texts = ["the cat sat on the mat", "birds fly south"]
    before = _tag_scores(nlp, texts)
    nlp.to_disk(tmp_path / "listening")
    for a, b in zip(before, _tag_scores(spacy.load(tmp_path / "listening"), texts)):
        numpy.testing.assert_allclose(a, b, atol=1e-6)
    # spaCy replaces listeners by config path; both live in model.tok2vec's block
    nlp.replace_listeners("elmo", "tagger", ["model.tok2vec", "model.tok2vec"])
    assert not nlp.get_pipe("elmo").listeners
    config = nlp.config["components"]["tagger"]["model"]["tok2vec"]
    assert config["elmo"]["@architectures"] == config["output_elmo"]["@architectures"] == "spacy-elmo.ElmoStandalone.v1"
    nlp.to_disk(tmp_path / "standalone")
    loaded = spacy.load(tmp_path / "standalone")
    loaded.remove_pipe("elmo")
    for a, b in zip(before, _tag_scores(loaded, texts)):
        numpy.testing.assert_allclose(a, b, atol=1e-6)
