"""Regression: settings saved with a pipeline overrode the config it was loaded with.

`spacy.load(path, config={...})` builds the `elmo` component from the config
with the overrides, then reads the saved files: the saved cfg (frozen, gamma,
set_doc_tensor...) and the biLM model's saved attrs (backend, max_length,
segmentation...) replaced the overrides, so `frozen = false` left a loaded
pipeline frozen and untrainable. The config's settings now win; the weights
still come from the files.
"""
import numpy
import spacy

from ..conftest import tagger_pipeline

OVERRIDES = {"frozen": False, "gamma": 2.0, "set_doc_tensor": True}
MODEL_OVERRIDES = {
    "backend": "reference", "max_length": 32, "stride": 16, "segmentation": "windows", "batch_tokens": 100,
}


def test_component_and_model_settings_from_the_config(allennlp_dir, tmp_path):
    nlp, _, _ = tagger_pipeline(allennlp_dir, frozen=True)
    nlp.to_disk(tmp_path)
    loaded = spacy.load(tmp_path, config={"components": {"elmo": {**OVERRIDES, "model": MODEL_OVERRIDES}}})
    elmo = loaded.get_pipe("elmo")
    assert not elmo.frozen and elmo.is_trainable and elmo.model.attrs["frozen"] is False
    assert elmo.cfg["gamma"] == 2.0 and elmo.cfg["set_doc_tensor"] is True
    assert {name: elmo.model.attrs[name] for name in MODEL_OVERRIDES} == MODEL_OVERRIDES
    doc = loaded("the cat sat on the mat")
    assert doc.tensor.shape == (6, elmo.bilm.width)  # set_doc_tensor: the mix of the layers


def test_without_overrides_nothing_changes(allennlp_dir, tmp_path):
    nlp, _, _ = tagger_pipeline(allennlp_dir, frozen=True, elmo_config={"gamma": 3.0})
    expected = nlp("the cat sat on the mat")._.elmo
    nlp.to_disk(tmp_path)
    loaded = spacy.load(tmp_path)
    elmo = loaded.get_pipe("elmo")
    assert elmo.frozen and elmo.cfg["gamma"] == 3.0
    numpy.testing.assert_array_equal(loaded("the cat sat on the mat")._.elmo, expected)


def test_from_bytes_keeps_the_new_components_settings(allennlp_dir):
    nlp, _, _ = tagger_pipeline(allennlp_dir, frozen=True)
    data = nlp.get_pipe("elmo").to_bytes()
    other = spacy.blank("en")
    elmo = other.add_pipe(
        "elmo", config={"weights": str(allennlp_dir), "frozen": False, "model": {"max_length": 32, "stride": 16}}
    )
    elmo.from_bytes(data)
    assert not elmo.frozen and elmo.model.attrs["max_length"] == 32 and elmo.model.attrs["stride"] == 16


def test_a_setting_changed_on_the_component_warns_on_load(allennlp_dir, tmp_path):
    """`elmo.frozen = False` without the pipe config: the config's setting wins, and a warning says so."""
    import pytest

    nlp, _, _ = tagger_pipeline(allennlp_dir, frozen=True)
    nlp.get_pipe("elmo").frozen = False
    nlp.to_disk(tmp_path / "component_only")
    with pytest.warns(UserWarning, match=r"frozen = False \(the config: True\)"):
        loaded = spacy.load(tmp_path / "component_only")
    assert loaded.get_pipe("elmo").frozen

    nlp.get_pipe_config("elmo")["frozen"] = False  # what scripts/finetune.py does
    nlp.to_disk(tmp_path / "both")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        loaded = spacy.load(tmp_path / "both")
    assert not loaded.get_pipe("elmo").frozen
