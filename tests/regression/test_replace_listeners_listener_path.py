"""Regression: `nlp.replace_listeners("elmo", "tagger", ["model.tok2vec.elmo"])` (the listener's own
dot-path inside an ElmoTok2Vec, as spaCy's docs describe listener paths) was accepted, trained and
saved, and the pipeline then failed to load with "Cannot deserialize model: mismatched structure":
spaCy writes the rewritten `model.tok2vec` block at each path it is given, so an ElmoTok2Vec block sat
inside its own `elmo` argument. That nesting is now put right before the models are swapped, so both
paths give the same pipeline."""
import numpy
import spacy

from tests.conftest import tagger_pipeline
from tests.layers.test_standalone import COMPOSITE, TEXTS, _scores


def test_the_listeners_own_path_gives_the_pipeline_the_tok2vec_path_gives(allennlp_dir, tmp_path):
    configs = []
    for path in ("model.tok2vec", "model.tok2vec.elmo"):
        nlp, examples, optimizer = tagger_pipeline(allennlp_dir, tok2vec=COMPOSITE)
        nlp.update(examples, sgd=optimizer)
        before = _scores(nlp)
        nlp.replace_listeners("elmo", "tagger", [path])
        block = nlp.config["components"]["tagger"]["model"]["tok2vec"]
        assert block["@architectures"] == "spacy-elmo.ElmoTok2Vec.v1"
        assert block["elmo"]["@architectures"] == "spacy-elmo.ElmoStandalone.v1"
        nlp.to_disk(tmp_path / path)
        loaded = spacy.load(tmp_path / path, exclude=["elmo"])
        for a, b in zip(before, _scores(loaded)):
            numpy.testing.assert_allclose(a, b, atol=1e-6)
        configs.append(loaded.config["components"]["tagger"])
    assert configs[0] == configs[1]
    assert [t.tag_ for t in spacy.load(tmp_path / "model.tok2vec.elmo")(TEXTS[0])]
