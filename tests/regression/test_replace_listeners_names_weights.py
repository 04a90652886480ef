"""Regression: after `replace_listeners`, the config no longer said which weights fill the biLM.

The standalone block copied the `elmo` component's model block but not its
`weights` (nor what its [initialize] loader read), so building the pipeline
again from its saved config (`spacy train` on it) filled the tagger's biLM
with the embedded English model instead. `ElmoStandalone.v1` now takes
`weights`, and `replace_listeners` writes the component's into it.
"""
import spacy
from spacy.util import load_model_from_config

from ..conftest import tagged_examples, tagger_pipeline


def _width(nlp):
    return nlp.get_pipe("tagger").model.get_ref("tok2vec").layers[0].get_dim("nO")


def test_the_standalone_block_names_the_components_weights(allennlp_dir, tmp_path):
    nlp, _, _ = tagger_pipeline(allennlp_dir)
    nlp.replace_listeners("elmo", "tagger", ["model.tok2vec"])
    nlp.remove_pipe("elmo")
    assert nlp.config["components"]["tagger"]["model"]["tok2vec"]["weights"] == str(allennlp_dir)
    rebuilt = load_model_from_config(nlp.config, auto_fill=True)
    rebuilt.initialize(lambda: tagged_examples(rebuilt))
    assert _width(rebuilt) == _width(nlp) == 32  # the fixture's biLM, not the embedded one (256)
    nlp.to_disk(tmp_path / "pipeline")
    assert _width(spacy.load(tmp_path / "pipeline")) == 32


def test_an_initialize_loader_is_named_too(allennlp_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")  # weights null: the [initialize] loader fills it
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2",
                                             "tok2vec": {"@architectures": "spacy-elmo.ElmoListener.v1"}}})
    nlp.config["initialize"]["components"]["elmo"] = {
        "loader": {"@model_loaders": "spacy-elmo.PublishedLoader.v1", "path": str(allennlp_dir)}}
    nlp.initialize(lambda: tagged_examples(nlp))
    nlp.replace_listeners("elmo", "tagger", ["model.tok2vec"])
    assert nlp.config["components"]["tagger"]["model"]["tok2vec"]["weights"] == str(allennlp_dir)


def _initialized_by_loader(allennlp_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2",
                                             "tok2vec": {"@architectures": "spacy-elmo.ElmoListener.v1"}}})
    nlp.config["initialize"]["components"]["elmo"] = {
        "loader": {"@model_loaders": "spacy-elmo.PublishedLoader.v1", "path": str(allennlp_dir)}}
    nlp.initialize(lambda: tagged_examples(nlp))
    return nlp


def test_the_loader_is_still_named_after_saving_and_loading(allennlp_dir, tmp_path):
    """Regression: which loader filled the biLM was kept on the component object only, so a
    pipeline loaded from disk named its `weights` (null: the embedded model) instead."""
    _initialized_by_loader(allennlp_dir).to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    loaded.replace_listeners("elmo", "tagger", ["model.tok2vec"])
    assert loaded.config["components"]["tagger"]["model"]["tok2vec"]["weights"] == str(allennlp_dir)


def test_the_loader_is_still_named_after_a_bytes_round_trip(allennlp_dir):
    nlp = _initialized_by_loader(allennlp_dir)
    restored = load_model_from_config(nlp.config, auto_fill=True).from_bytes(nlp.to_bytes())
    restored.replace_listeners("elmo", "tagger", ["model.tok2vec"])
    assert restored.config["components"]["tagger"]["model"]["tok2vec"]["weights"] == str(allennlp_dir)


def test_loading_files_without_a_loader_forgets_an_earlier_one(allennlp_dir, tmp_path):
    """The provenance follows the weights: files saved without a loader replace what one set."""
    nlp, _, _ = tagger_pipeline(allennlp_dir)  # its `weights` names the fixture, no [initialize] loader
    nlp.to_disk(tmp_path / "plain")
    other = _initialized_by_loader(allennlp_dir)
    other.get_pipe("elmo").from_disk(tmp_path / "plain" / "elmo", exclude=["vocab"])
    assert "initialized_from" not in other.get_pipe("elmo").cfg
