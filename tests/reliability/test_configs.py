"""Misconfigurations fail at build or initialize time with a clear message, never as NaNs later."""
import pytest
import spacy
from spacy.training import Example

from spacy_elmo.layers import ScalarMix


def _tagger(nlp, tok2vec):
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": tok2vec}})
    return [Example.from_dict(nlp.make_doc("a b"), {"tags": ["X", "Y"]})]


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


def test_component_mix_of_wrong_length(allennlp_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir), "mix": [1.0, 2.0]})
    with pytest.raises(ValueError, match="mix has 2 weights but the biLM has 3 layers"):
        nlp("text")


def test_bad_model_settings():
    nlp = spacy.blank("en")
    with pytest.raises(Exception, match="segmentation must be one of"):
        model = {"@architectures": "spacy-elmo.ElmoBiLM.v1", "segmentation": "paragraphs"}
        nlp.add_pipe("elmo", config={"model": model})
