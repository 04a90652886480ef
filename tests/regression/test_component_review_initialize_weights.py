"""Regression: weights given at initialize were written into the component's `weights` setting.

`[initialize.components.elmo] weights = DIR` (the documented way) or
`elmo.initialize(get_examples, weights=DIR)` set `cfg["weights"]`, which the
config says is null, so every `spacy.load` of the saved pipeline warned that a
setting had been changed after the build (with advice that did not apply) and
then reset it to null: `repr(elmo)` said `weights=default` though the biLM was
DIR's. Now the model an initialize loader read is recorded only as provenance
(`cfg["initialized_from"]`); no warning, and `repr(elmo)` and
`elmo.weights_source` name DIR, before and after saving.
"""
import warnings

import spacy
from spacy.training import Example
from spacy.util import load_model_from_config


def _initialized_with_weights(weights: str):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    config = nlp.config.copy()
    config["initialize"]["components"] = {"elmo": {"weights": weights}}
    nlp = load_model_from_config(config, auto_fill=True)
    nlp.initialize()
    return nlp


def _load_without_warnings(path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return spacy.load(path)


def test_loading_a_pipeline_initialized_with_weights_does_not_warn(allennlp_dir, tmp_path):
    _initialized_with_weights(str(allennlp_dir)).to_disk(tmp_path / "pipeline")
    elmo = _load_without_warnings(tmp_path / "pipeline").get_pipe("elmo")
    assert elmo.weights_source == str(allennlp_dir)
    assert f"weights={allennlp_dir}" in repr(elmo)
    assert elmo.model.get_dim("nO") == 32  # the fixture's biLM, not the embedded one


def test_the_weights_setting_stays_the_configs(allennlp_dir):
    elmo = _initialized_with_weights(str(allennlp_dir)).get_pipe("elmo")
    assert elmo.cfg["weights"] is None
    assert elmo.weights_source == str(allennlp_dir)
    assert f"weights={allennlp_dir}" in repr(elmo)


def test_weights_passed_to_initialize_directly(allennlp_dir, tmp_path):
    nlp = spacy.blank("en")
    elmo = nlp.add_pipe("elmo")
    elmo.initialize(lambda: [Example.from_dict(nlp.make_doc("a b"), {})], weights=str(allennlp_dir))
    nlp.to_disk(tmp_path / "pipeline")
    loaded = _load_without_warnings(tmp_path / "pipeline").get_pipe("elmo")
    assert f"weights={allennlp_dir}" in repr(loaded)


def test_a_pipeline_saved_with_the_old_cfg_loads_without_warning(allennlp_dir, tmp_path):
    """Files saved before the fix hold `weights = DIR` and `initialized_from = DIR` in the cfg."""
    import srsly

    _initialized_with_weights(str(allennlp_dir)).to_disk(tmp_path / "pipeline")
    cfg_file = tmp_path / "pipeline" / "elmo" / "cfg"
    srsly.write_json(cfg_file, {**srsly.read_json(cfg_file), "weights": str(allennlp_dir)})
    elmo = _load_without_warnings(tmp_path / "pipeline").get_pipe("elmo")
    assert elmo.weights_source == str(allennlp_dir)
