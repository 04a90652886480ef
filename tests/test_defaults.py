"""Every place that offers a default takes it from spacy_elmo/defaults.py.

The expected values are read from that module, never written here, so a
default changes in one line; a place that grows its own copy, or a new
setting of the architecture without a single default, fails here.
"""
import inspect

import pytest

from spacy_elmo import defaults


def _defaults_of(function):
    return {
        name: p.default for name, p in inspect.signature(function).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


def _option_defaults(command):
    """A typer command's option defaults (an OptionInfo holds its default in .default)."""
    return {name: getattr(value, "default", value) for name, value in _defaults_of(command).items()}


@pytest.fixture(scope="module")
def factory_config():
    import spacy

    import spacy_elmo.pipeline  # noqa: F401  (registers the factory)

    return spacy.blank("en").get_factory_meta("elmo").default_config


def test_the_factory_model_block_is_the_single_source(factory_config):
    expected = {"@architectures": defaults.ARCHITECTURE, **defaults.model_settings()}
    assert dict(factory_config["model"]) == expected
    assert list(factory_config["model"])[1:] == list(defaults.model_settings())


def test_the_architecture_takes_the_same_defaults():
    from spacy_elmo.layers.bilm_model import ElmoBiLM

    signature = _defaults_of(ElmoBiLM)
    settings = defaults.model_settings()
    # every setting of the architecture has its one default (sizes and seed are not in the factory's block)
    assert set(signature) - {"bilm", "seed"} == set(settings)
    assert {name: signature[name] for name in settings} == settings
    assert signature["seed"] == defaults.SEED and signature["bilm"] is None


def test_the_segments_and_the_doc_cache_take_the_same_defaults():
    from spacy_elmo.layers.doc_cache import DocCache
    from spacy_elmo.layers.segments import DEFAULT_STRIDE, doc_segments, split_window

    assert DEFAULT_STRIDE == defaults.STRIDE
    segments = _defaults_of(doc_segments)
    assert (segments["max_window"], segments["max_length"]) == (defaults.MAX_WINDOW, defaults.MAX_LENGTH)
    assert (segments["segmentation"], segments["skip_whitespace"]) == (defaults.SEGMENTATION, defaults.SKIP_WHITESPACE)
    assert _defaults_of(split_window)["max_length"] == defaults.MAX_LENGTH
    assert DocCache().max_bytes == defaults.DOC_CACHE_BYTES


def test_the_embed_command_and_ray_take_the_same_defaults():
    from spacy_elmo.bilm.engine.bulk import EMBED_BATCH_SENTENCES, EMBED_BATCH_TOKENS
    from spacy_elmo.cli.embed import embed_cli
    from spacy_elmo.embedding import ray

    options = _option_defaults(embed_cli)
    assert options["cache"] == defaults.TOKEN_CACHE_SIZE and options["backend"] == defaults.BACKEND
    # bulk embedding batches with its own budget (see defaults.py), defined once in bilm/bulk.py
    assert (options["batch_tokens"], options["batch_size"]) == (EMBED_BATCH_TOKENS, EMBED_BATCH_SENTENCES)
    for function in (ray.EmbedSettings, ray.embed_dataset, ray.embed_files):
        found = _defaults_of(function)
        assert (found["cache"], found["backend"]) == (defaults.TOKEN_CACHE_SIZE, defaults.BACKEND), function


def test_the_component_class_and_its_factory_agree(factory_config):
    from spacy_elmo.pipeline.component import Elmo

    signature = _defaults_of(Elmo.__init__)
    settings = {k: v for k, v in factory_config.items() if k != "model"}
    assert set(settings) <= set(signature)
    assert {k: signature[k] for k in settings} == settings
    assert settings["threads"] == defaults.THREADS
