"""Misconfigurations fail at build or initialize time with a clear message, never as NaNs later."""
import pytest
import spacy
from spacy.training import Example

from spacy_elmo.layers import ElmoListener, ElmoTok2Vec, ScalarMix
from spacy_elmo.pipeline import ElmoNotReady


def _tagger(nlp, tok2vec):
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": tok2vec}})
    return [Example.from_dict(nlp.make_doc("a b"), {"tags": ["X", "Y"]})]


def test_listener_width_must_be_positive():
    with pytest.raises(ValueError, match="width must be a positive integer"):
        ElmoListener(width=0)


def test_composite_width_mismatch():
    from spacy.ml.models.tok2vec import MaxoutWindowEncoder

    with pytest.raises(ValueError, match="encoder's width \\(64\\) differs"):
        ElmoTok2Vec(ElmoListener(), width=32, encode=MaxoutWindowEncoder(width=64, window_size=1, maxout_pieces=3, depth=1))


def test_listener_naming_a_missing_upstream(allennlp_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir)})
    examples = _tagger(nlp, {"@architectures": "spacy-elmo.ElmoListener.v1", "upstream": "elmo2"})
    with pytest.raises(ValueError, match="upstream 'elmo2'.*not linked"):
        nlp.initialize(lambda: examples)


def test_listener_without_any_elmo_component():
    nlp = spacy.blank("en")
    examples = _tagger(nlp, {"@architectures": "spacy-elmo.ElmoListener.v1"})
    with pytest.raises(ValueError, match="add an 'elmo' component before it"):
        nlp.initialize(lambda: examples)


def test_mix_initial_weights_must_match_the_biLM(allennlp_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir)})
    examples = _tagger(nlp, {"@architectures": "spacy-elmo.ElmoListener.v1",
                             "mix": {"@layers": "spacy-elmo.ScalarMix.v1", "initial_weights": [0.0, 1.0]}})
    with pytest.raises(ValueError, match="set up for 2 layers but the biLM gives 3"):
        nlp.initialize(lambda: examples)


def test_bad_mix_options():
    with pytest.raises(ValueError, match="layer_dropout"):
        ScalarMix(layer_dropout=1.0)
    with pytest.raises(ValueError, match="l2_lambda"):
        ScalarMix(l2_lambda=-1)


def test_frozen_random_biLM_refused_before_any_training():
    nlp = spacy.blank("en")
    sizes = {"lstm_dim": 8, "projection_dim": 4, "n_layers": 1, "filters": [[1, 4]], "n_highway": 0}
    nlp.add_pipe("elmo", config={"model": {"@architectures": "spacy-elmo.ElmoBiLM.v1", "bilm": sizes}})
    examples = _tagger(nlp, {"@architectures": "spacy-elmo.ElmoListener.v1"})
    with pytest.raises(ElmoNotReady, match="random weights"):
        nlp.initialize(lambda: examples)


def test_component_mix_of_wrong_length(allennlp_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir), "mix": [1.0, 2.0]})
    with pytest.raises(ValueError, match="mix has 2 weights but the biLM has 3 layers"):
        nlp("text")


def test_bad_model_settings():
    nlp = spacy.blank("en")
    with pytest.raises(Exception, match="segmentation must be one of"):
        nlp.add_pipe("elmo", config={"model": {"@architectures": "spacy-elmo.ElmoBiLM.v1", "segmentation": "paragraphs"}})
