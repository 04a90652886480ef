"""Regression: the biLM settings of a standalone block (after `replace_listeners`) kept their saved
values over the config's.

`spacy.load(path, config=...)` with another `max_length`, `segmentation`, `backend`,
`batch_tokens` or `token_cache_size` for `components.tagger.model.tok2vec.bilm` showed them in
`nlp.config`, but thinc put the saved attrs back over them and nothing warned: a tagger shipped
alone could not be moved to another backend or a smaller batch at load. The `elmo` component
restores its own after loading; the standalone's are now settings the config decides
(`layers/config_value.py`), and a pipeline loaded without overrides is as saved.
"""
import spacy

from spacy_elmo.layers.bilm_model import _segments, get_bilm
from spacy_elmo.layers.config_value import setting

from ..conftest import tagger_pipeline

OVERRIDE = {"max_length": 8, "stride": 4, "segmentation": "windows", "batch_tokens": 64,
            "backend": "reference", "token_cache_size": 0}
TEXT = "the dog sat in the south while a cat ran off into the night and birds flew south again"


def _standalone_bilm(nlp):
    return nlp.get_pipe("tagger").model.get_ref("tok2vec").get_ref("listener")


def _settings(nlp):
    return {name: setting(_standalone_bilm(nlp), name) for name in OVERRIDE}


def _longest_segment(nlp, doc) -> int:
    return max(len(segment.indices) for segment in _segments(_standalone_bilm(nlp), doc))


def test_the_config_decides_the_standalone_biLM_settings(allennlp_dir, tmp_path):
    nlp, _, _ = tagger_pipeline(allennlp_dir)
    nlp.replace_listeners("elmo", "tagger", ["model.tok2vec"])
    nlp.remove_pipe("elmo")
    nlp.to_disk(tmp_path / "pipeline")
    saved = _settings(nlp)
    assert saved != OVERRIDE
    expected_tags = [token.tag_ for token in nlp(TEXT)]

    override = {"components": {"tagger": {"model": {"tok2vec": {"bilm": OVERRIDE}}}}}
    loaded = spacy.load(tmp_path / "pipeline", config=override)
    assert _settings(loaded) == OVERRIDE
    doc = loaded(TEXT)
    module = get_bilm(_standalone_bilm(loaded))
    assert module.backend == "reference" and module.token_cache is None
    assert _longest_segment(loaded, doc) == OVERRIDE["max_length"] < len(doc)

    as_saved = spacy.load(tmp_path / "pipeline")
    assert _settings(as_saved) == saved
    assert _longest_segment(as_saved, doc) == len(doc)
    assert [token.tag_ for token in as_saved(TEXT)] == expected_tags
