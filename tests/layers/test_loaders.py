"""Registered loaders fill the biLM at initialize; the [components] block names no path."""
import json
import sys

import numpy
import pytest
import spacy
from spacy.training import Example
from thinc.api import Config

from spacy_elmo.io import WeightsError, load_bilm, save_native
from spacy_elmo.layers import get_bilm

CONFIG = """
[nlp]
lang = "en"
pipeline = ["elmo"]

[components]

[components.elmo]
factory = "elmo"

[initialize]

[initialize.components]

[initialize.components.elmo]

[initialize.components.elmo.loader]
@model_loaders = "{loader}"
{setting}
"""


def _initialized(loader: str, setting: str = "", model=None):
    config = Config().from_str(CONFIG.format(loader=loader, setting=setting))
    if model is not None:
        config["components"]["elmo"]["model"] = model
    nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=True)
    nlp.initialize(lambda: [Example.from_dict(nlp.make_doc("a b"), {})])
    return nlp


def _same_as(nlp, bilm):
    words = ["The", "bank", "of", "the", "river", "."]
    numpy.testing.assert_allclose(nlp(" ".join(words))._.elmo, bilm.embed([words])[0], atol=1e-5)


def test_published_loader(allennlp_dir, tmp_path):
    nlp = _initialized("spacy-elmo.PublishedLoader.v1", f'path = "{allennlp_dir}"')
    _same_as(nlp, load_bilm(allennlp_dir))
    assert str(allennlp_dir) not in json.dumps(nlp.config["components"])
    nlp.to_disk(tmp_path / "p")  # the loaded weights travel with the pipeline
    saved_cfg = json.loads((tmp_path / "p" / "elmo" / "cfg").read_text())
    assert saved_cfg["weights"] is None  # only where the weights came from, for replace_listeners
    assert saved_cfg["initialized_from"] == str(allennlp_dir)
    _same_as(spacy.load(tmp_path / "p"), load_bilm(allennlp_dir))


def test_native_loader(allennlp_dir, tmp_path):
    save_native(tmp_path / "native", load_bilm(allennlp_dir))
    nlp = _initialized("spacy-elmo.NativeLoader.v1", f'path = "{tmp_path / "native"}"')
    _same_as(nlp, load_bilm(allennlp_dir))
    with pytest.raises(WeightsError, match="PublishedLoader"):
        _initialized("spacy-elmo.NativeLoader.v1", f'path = "{allennlp_dir}"')


def test_embedded_loader():
    nlp = _initialized("spacy-elmo.EmbeddedLoader.v1")
    _same_as(nlp, load_bilm())
    with pytest.raises(WeightsError, match="no embedded model 'nonexistent'"):
        _initialized("spacy-elmo.EmbeddedLoader.v1", 'name = "nonexistent"')


def test_loader_fills_the_shapes_the_architecture_built(allennlp_dir):
    sizes = load_bilm(allennlp_dir).config.to_dict()
    names = ("lstm_dim", "projection_dim", "n_layers", "filters", "n_highway", "char_embedding_dim")
    shapes = {k: sizes[k] for k in names}
    model = {"@architectures": "spacy-elmo.ElmoBiLM.v1", "bilm": shapes}
    nlp = _initialized("spacy-elmo.PublishedLoader.v1", f'path = "{allennlp_dir}"', model=model)
    _same_as(nlp, load_bilm(allennlp_dir))
    wrong = dict(shapes, lstm_dim=shapes["lstm_dim"] * 2)
    with pytest.raises(WeightsError, match="lstm_dim"):
        _initialized("spacy-elmo.PublishedLoader.v1", f'path = "{allennlp_dir}"',
                     model={"@architectures": "spacy-elmo.ElmoBiLM.v1", "bilm": wrong})


def test_missing_directory_is_one_clear_error(tmp_path):
    with pytest.raises(WeightsError, match="no such directory"):
        _initialized("spacy-elmo.PublishedLoader.v1", f'path = "{tmp_path / "missing"}"')


def test_the_registry_is_shared_with_spacy_curated_transformers(tmp_path, monkeypatch):
    """That package creates `model_loaders` on import and fails if it exists: it is imported first."""
    from thinc.api import registry

    from spacy_elmo.layers.loaders import _ensure_registry

    (tmp_path / "spacy_curated_transformers.py").write_text(
        "import thinc\nthinc.registry.create('model_loaders', entry_points=True)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "spacy_curated_transformers", raising=False)
    monkeypatch.delattr(registry, "model_loaders")
    try:
        _ensure_registry()
        assert "spacy_curated_transformers" in sys.modules
        assert registry.model_loaders.get("spacy-elmo.NativeLoader.v1")  # same catalogue namespace
    finally:
        sys.modules.pop("spacy_curated_transformers", None)


def test_weights_setting_still_works(allennlp_dir):
    """add_pipe("elmo", config={"weights": DIR}) and [initialize.components.elmo] weights = DIR."""
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir)})
    _same_as(nlp, load_bilm(allennlp_dir))
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    nlp.initialize(lambda: [Example.from_dict(nlp.make_doc("a b"), {})])
    assert get_bilm(nlp.get_pipe("elmo").model).width == load_bilm().width


def _doc(text="The bank of the river ."):
    return spacy.blank("en").make_doc(text)


@pytest.fixture
def reads(monkeypatch):
    """Every model a loader reads, by source (WeightsLoader.read, counted)."""
    from spacy_elmo.layers.loaders import WeightsLoader

    seen = []
    real = WeightsLoader.read

    def counting(self, with_softmax=False):
        seen.append(self.source)
        return real(self, with_softmax)

    monkeypatch.setattr(WeightsLoader, "read", counting)
    return seen


def test_resolve_loader_names_every_kind_of_setting(allennlp_dir):
    from spacy_elmo.layers.loaders import WeightsLoader, resolve_loader
    from spacy_elmo.resources import DEFAULT_MODEL_DIR

    embedded = resolve_loader(None)
    assert isinstance(embedded, WeightsLoader) and embedded.source == f"embedded model {DEFAULT_MODEL_DIR.name}"
    assert resolve_loader(str(allennlp_dir)).source == str(allennlp_dir)
    assert resolve_loader("small").source == "small"  # a catalogue name: nothing fetched until it runs

    def custom(model, X=None, Y=None):
        return model

    assert resolve_loader(custom) is custom
    assert resolve_loader(allennlp_dir).read().bilm.width == load_bilm(allennlp_dir).width


def test_the_forward_reads_no_file(reads):
    """A biLM model that holds no biLM refuses to run; it does not go and load one."""
    from spacy_elmo.layers import ElmoBiLM, ElmoNotReady

    model = ElmoBiLM()
    with pytest.raises(ElmoNotReady, match="no biLM weights are loaded"):
        model.predict([_doc()])
    with pytest.raises(ElmoNotReady):
        model.begin_update([_doc()])
    assert reads == []


def test_a_bare_model_is_filled_by_its_loader_at_initialize(allennlp_dir, reads):
    from spacy_elmo.layers import ElmoBiLM, PublishedLoader

    model = ElmoBiLM()
    model.attrs["loader"] = PublishedLoader(allennlp_dir)
    model.initialize()
    assert reads == [str(allennlp_dir)]
    words = ["The", "bank", "of", "the", "river", "."]
    numpy.testing.assert_allclose(model.predict([_doc()])[0], load_bilm(allennlp_dir).embed([words])[0], atol=1e-5)


def test_the_component_loads_once_on_first_use(allennlp_dir, reads):
    """add_pipe reads nothing; the first doc runs the loader; later docs and batches reuse it."""
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir)})
    assert reads == []
    nlp("first")
    nlp("second")
    list(nlp.pipe(["third", "fourth"]))
    assert reads == [str(allennlp_dir)]
    _same_as(nlp, load_bilm(allennlp_dir))


def test_the_embedded_model_without_initialize(reads):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    doc = nlp("The bank of the river .")
    assert doc._.elmo.shape[:2] == (3, 6) and len(reads) == 1


def test_a_loaded_pipeline_never_runs_its_loader(allennlp_dir, tmp_path, reads):
    """spacy.load and from_bytes fill the biLM from the pipeline's own bytes: the weights it names are not read."""
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir)})
    nlp.to_disk(tmp_path / "p")
    data = nlp.to_bytes()
    assert reads == [str(allennlp_dir)]  # saving before first use loads once, so the pipeline carries its weights
    reads.clear()
    loaded = spacy.load(tmp_path / "p")
    _same_as(loaded, load_bilm(allennlp_dir))
    other = spacy.blank("en")
    other.add_pipe("elmo", config={"weights": str(allennlp_dir)})
    other.from_bytes(data)
    _same_as(other, load_bilm(allennlp_dir))
    assert reads == []
