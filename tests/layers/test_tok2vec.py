"""ElmoTok2Vec: the ELMo mix concatenated with the task's own features, projected, then encoded."""
import pytest
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
