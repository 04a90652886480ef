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
