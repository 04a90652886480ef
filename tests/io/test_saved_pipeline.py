"""A saved spaCy pipeline as a model source: the biLM its `elmo` component holds (a fine-tuned one's
only copy) loads wherever a model does, converts, and fails clearly where there is none to read."""
import json

import numpy
import pytest
import spacy
import srsly
import torch
from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.io import WeightsError, load_model
from spacy_elmo.io.saved_pipeline import is_pipeline

from ..text import one_line

TEXT = "The bank of the river ."


@pytest.fixture
def tuned_pipeline(allennlp_dir, tmp_path):
    """A saved pipeline whose biLM differs from the weights it started from, as a fine-tuned one's does."""
    nlp = spacy.blank("en")
    elmo = nlp.add_pipe("elmo", config={"weights": str(allennlp_dir)})
    with torch.no_grad():
        elmo.bilm.lstm.weight_proj[0].mul_(0.5)
    elmo.bilm.clear_cache()
    nlp.to_disk(tmp_path / "pipeline")
    return nlp, tmp_path / "pipeline"


def test_the_pipeline_and_its_component_folder_give_the_components_biLM(tuned_pipeline, allennlp_dir):
    nlp, path = tuned_pipeline
    saved = nlp.get_pipe("elmo").bilm.state_dict()
    for source in (path, path / "elmo"):
        assert is_pipeline(source)
        model = load_model(source)
        assert model.head is None
        assert all(torch.equal(model.bilm.state_dict()[name], saved[name]) for name in saved)
        assert model.metadata["format"] == "spacy-pipeline"
        assert model.metadata["component"] == "elmo"
        assert model.metadata["weights"] == str(allennlp_dir)
    start = load_model(allennlp_dir).bilm.state_dict()
    assert not torch.equal(load_model(path).bilm.state_dict()["lstm.weight_proj.0"], start["lstm.weight_proj.0"])


def test_another_pipeline_takes_its_weights(tuned_pipeline):
    nlp, path = tuned_pipeline
    other = spacy.blank("en")
    other.add_pipe("elmo", config={"weights": str(path)})
    numpy.testing.assert_array_equal(other(TEXT)._.elmo, nlp(TEXT)._.elmo)


@pytest.mark.parametrize("target", ["native", "published"])
def test_convert_writes_the_pipelines_biLM(tuned_pipeline, tmp_path, target):
    nlp, path = tuned_pipeline
    result = CliRunner().invoke(app, ["convert", str(path), str(tmp_path / "out"), "--to", target])
    assert result.exit_code == 0, result.output
    converted = load_model(tmp_path / "out").bilm.state_dict()
    saved = nlp.get_pipe("elmo").bilm.state_dict()
    assert all(torch.equal(converted[name], saved[name]) for name in saved)
    if target == "native":
        meta = json.loads((tmp_path / "out" / "elmo.json").read_text(encoding="utf-8"))["metadata"]
        assert meta["format"] == "native"
        assert meta["converted_from"]["format"] == "spacy-pipeline"


def test_a_pipeline_without_an_elmo_component_is_an_error(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.to_disk(tmp_path / "pipeline")
    with pytest.raises(WeightsError, match="none of whose components holds a biLM"):
        load_model(tmp_path / "pipeline")


def test_a_folder_that_is_not_an_elmo_components_is_an_error(tuned_pipeline):
    import shutil

    _, path = tuned_pipeline
    shutil.copytree(path / "elmo", path / "copied")  # a component's files, but no component of that name
    with pytest.raises(WeightsError, match="copied: not the folder of a component of the pipeline"):
        load_model(path / "copied")


def test_two_elmo_components_are_named_by_their_folder(allennlp_dir, tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir)})
    second = nlp.add_pipe("elmo", name="elmo_tuned", config={"weights": str(allennlp_dir)})
    with torch.no_grad():
        second.bilm.lstm.weight_proj[0].mul_(0.5)
    nlp.to_disk(tmp_path / "pipeline")
    with pytest.raises(WeightsError, match=r"components elmo, elmo_tuned hold different biLMs; name the folder"):
        load_model(tmp_path / "pipeline")
    chosen = load_model(tmp_path / "pipeline" / "elmo_tuned").bilm.state_dict()["lstm.weight_proj.0"]
    assert torch.equal(chosen, second.bilm.state_dict()["lstm.weight_proj.0"])


def test_a_damaged_model_file_is_an_error_naming_it(tuned_pipeline):
    _, path = tuned_pipeline
    model_file = path / "elmo" / "model"
    data = model_file.read_bytes()
    model_file.write_bytes(data[: len(data) // 2])
    with pytest.raises(WeightsError, match="elmo/model: not a saved thinc model, or a damaged one"):
        load_model(path)
    # whole msgpack, flipped bytes inside the biLM: the native format's checksum finds them
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0xFF
    model_file.write_bytes(bytes(flipped))
    with pytest.raises(WeightsError, match="elmo/model"):
        load_model(path)


@pytest.mark.parametrize("state, message", [
    (b"", "holds no weights"),
    (srsly.msgpack_dumps({"config": {}, "state": b"x"}), "holds no biLM in the native format"),
])
def test_a_component_without_native_weights_is_an_error(tuned_pipeline, state, message):
    _, path = tuned_pipeline
    envelope = srsly.msgpack_dumps({"config": {}, "state": state})
    model_file = path / "elmo" / "model"
    saved = srsly.msgpack_loads(model_file.read_bytes())
    saved["shims"] = [[envelope] if node else [] for node in saved["shims"]]
    model_file.write_bytes(srsly.msgpack_dumps(saved))
    with pytest.raises(WeightsError, match=message):
        load_model(path)


def _tagger_with_its_own_biLM(allennlp_dir):
    """elmo + a tagger given its own copy of the biLM by replace_listeners, the copy changed apart."""
    from spacy_elmo.layers.bilm_model import get_bilm
    from tests.conftest import tagger_pipeline

    nlp, _, _ = tagger_pipeline(allennlp_dir)
    nlp.replace_listeners("elmo", "tagger", ["model.tok2vec"])
    copies = [node for node in nlp.get_pipe("tagger").model.walk() if node.name == "elmo-bilm"]
    assert len(copies) == 1
    own = get_bilm(copies[0])
    with torch.no_grad():
        own.lstm.weight_proj[0].mul_(0.5)
    own.clear_cache()
    return nlp, own


def test_a_biLM_that_replace_listeners_moved_into_a_tagger_is_found(allennlp_dir, tmp_path):
    nlp, own = _tagger_with_its_own_biLM(allennlp_dir)
    nlp.to_disk(tmp_path / "both")
    with pytest.raises(WeightsError, match=r"components elmo, tagger hold different biLMs; name the folder"):
        load_model(tmp_path / "both")
    from_tagger = load_model(tmp_path / "both" / "tagger")
    assert torch.equal(from_tagger.bilm.state_dict()["lstm.weight_proj.0"], own.state_dict()["lstm.weight_proj.0"])
    assert from_tagger.metadata["component"] == "tagger"
    nlp.remove_pipe("elmo")
    nlp.to_disk(tmp_path / "tagger_alone")
    alone = load_model(tmp_path / "tagger_alone").bilm.state_dict()["lstm.weight_proj.0"]
    assert torch.equal(alone, own.state_dict()["lstm.weight_proj.0"])


def test_equal_copies_are_one_biLM(allennlp_dir, tmp_path):
    from tests.conftest import tagger_pipeline

    nlp, _, _ = tagger_pipeline(allennlp_dir)
    nlp.replace_listeners("elmo", "tagger", ["model.tok2vec"])
    nlp.to_disk(tmp_path / "pipeline")
    assert load_model(tmp_path / "pipeline").metadata["component"] == "elmo"


def test_a_pipeline_saved_without_its_elmo_component_says_so(tuned_pipeline, tmp_path):
    nlp, _ = tuned_pipeline
    nlp.to_disk(tmp_path / "excluded", exclude=["elmo"])
    with pytest.raises(WeightsError, match=r"'elmo' has no saved files .*saved without it"):
        load_model(tmp_path / "excluded")


def test_a_pipeline_in_an_archive_loads_through_the_cache(tuned_pipeline, tmp_path, monkeypatch):
    """`spacy package`-free sharing: a pipeline tarred with its folder is a model source like any archive."""
    from .model_server import make_tar, use_cache

    nlp, path = tuned_pipeline
    use_cache(tmp_path, monkeypatch)
    archive = make_tar(path, tmp_path / "pipeline.tar.gz", prefix="model-best/")
    model = load_model(archive)
    assert model.metadata["format"] == "spacy-pipeline"
    saved = nlp.get_pipe("elmo").bilm.state_dict()
    assert all(torch.equal(model.bilm.state_dict()[name], saved[name]) for name in saved)


def test_an_installed_pipeline_package_is_a_source_by_its_name(tuned_pipeline, tmp_path, monkeypatch):
    """What `spacy package` builds (and pip installs) is found by its package name, as spacy.load finds it."""
    from spacy.cli.package import package

    from spacy_elmo.io import resolve_source

    nlp, path = tuned_pipeline
    (tmp_path / "packages").mkdir()
    package(path, tmp_path / "packages", name="elmo_source_test", version="1.2.3", create_sdist=False)
    site = tmp_path / "packages" / "en_elmo_source_test-1.2.3"
    monkeypatch.syspath_prepend(str(site))
    folder = site / "en_elmo_source_test" / "en_elmo_source_test-1.2.3"
    assert resolve_source("en_elmo_source_test") == folder
    model = load_model("en_elmo_source_test")
    saved = nlp.get_pipe("elmo").bilm.state_dict()
    assert all(torch.equal(model.bilm.state_dict()[name], saved[name]) for name in saved)
    assert model.metadata["source"] == str(folder / "elmo")
    other = spacy.blank("en")
    other.add_pipe("elmo", config={"weights": "en_elmo_source_test"})
    numpy.testing.assert_array_equal(other(TEXT)._.elmo, nlp(TEXT)._.elmo)
    said = CliRunner().invoke(app, ["download", "en_elmo_source_test"])
    assert said.exit_code == 0, said.output
    assert f"en_elmo_source_test is an installed pipeline package, in {folder}: nothing to download" in \
        one_line(said.output)


@pytest.mark.parametrize("name", ["json", "spacy_elmo_no_such_package"])
def test_a_package_that_holds_no_pipeline_is_no_source(name):
    """An importable module (json) is not a pipeline: the one not-found error, naming what was tried."""
    with pytest.raises(WeightsError, match=f"{name}: no such directory, .* or installed pipeline package"):
        load_model(name)
