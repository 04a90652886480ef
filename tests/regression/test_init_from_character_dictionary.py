"""Regression: `pretrain --init-from` a converted ELMoForManyLangs model failed with torch's
"size mismatch for token_encoder.char_embed" traceback, after "[model] taken from ..." had been
printed: [model] has no place for the model's character dictionary, so the run built a byte-reading
biLM and could not load the start model's weights into it. It is now refused before anything is
built, in one line saying why.
"""
import pytest

from spacy_elmo.io import load_model, save_native
from spacy_elmo.pretrain import SettingsError, pretrain
from tests.io.manylangs_model import write_manylangs_model

from ..pretrain.runs import _config


def test_a_character_dictionary_model_is_refused_with_the_reason(tiny_config_path, small_corpus, tmp_path):
    manylangs = load_model(write_manylangs_model(tmp_path / "manylangs"))
    assert manylangs.bilm.config.characters == "dictionary"
    save_native(tmp_path / "native", manylangs.bilm)
    config = _config(tiny_config_path, paths__train=str(small_corpus), paths__init_from=str(tmp_path / "native"),
                     training__threads=1)
    with pytest.raises(SettingsError, match="reads characters through a dictionary of its own"):
        pretrain(config, tmp_path / "run", progress=False)
    assert not (tmp_path / "run" / "model-last").exists()
