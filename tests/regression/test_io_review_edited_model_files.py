"""Regression: model files edited by hand (or damaged where no checksum looks) loaded wrongly or
failed badly.

- elmo.json: `"bilm": null` gave a TypeError traceback, `"metadata": null` an AttributeError in
  `convert` and `info`, and `"boundary_strings": "false"` loaded as true (bool("false")), moving a
  sentence holding `<S>` by 1.7.
- Sizes no weight shape checks: `max_characters_per_token` 10**9 ran out of memory (or was killed) and
  `n_layers` 10**6 took 136 s and 4.8 GB before the refusal. Bounded now (64 layers, 4,096 characters).
- An integer tensor in bilm.safetensors (with no checksum listed) was cast into floats: other vectors.
- `spacy.load` of a pipeline whose biLM bytes fail their checksum said "serialized elmo component",
  not which file.
"""
import json

import pytest
import spacy
from safetensors.torch import load_file, save_file

from spacy_elmo.bilm.config import BiLMConfig, OptionsError
from spacy_elmo.io import DamagedFileError, WeightsError, load_bilm, save_native
from spacy_elmo.layers.loaders import read_weights
from tests.conftest import tagger_pipeline


@pytest.fixture
def native(tmp_path):
    folder = tmp_path / "model"
    save_native(folder, read_weights().bilm)
    return folder


def _edit_meta(folder, **changes):
    meta = json.loads((folder / "elmo.json").read_text())
    meta.update(changes)
    (folder / "elmo.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("changes, named", [
    ({"bilm": None}, "'bilm' must be an object"),
    ({"metadata": None}, "'metadata' must be an object"),
    ({"metadata": [1]}, "'metadata' must be an object"),
    ({"boundary_strings": "false"}, "'boundary_strings' must be true or false"),
])
def test_elmo_json_values_of_the_wrong_type(native, changes, named):
    _edit_meta(native, **changes)
    with pytest.raises(WeightsError, match=named):
        load_bilm(native)


@pytest.mark.parametrize("key, value", [("n_layers", 10**6), ("n_highway", 10**6),
                                        ("max_characters_per_token", 10**9)])
def test_sizes_past_any_model_are_refused_before_anything_is_built(key, value):
    with pytest.raises(OptionsError, match=f"{key} must be at most"):
        BiLMConfig(**{key: value})


def test_an_integer_tensor_is_not_read_as_weights(native):
    meta = json.loads((native / "elmo.json").read_text())
    meta["sha256"] = {}  # no checksum to catch it
    (native / "elmo.json").write_text(json.dumps(meta))
    tensors = load_file(str(native / "bilm.safetensors"))
    name = next(n for n, t in tensors.items() if t.is_floating_point())
    tensors[name] = tensors[name].view(__import__("torch").int32)  # the same bytes, declared as int32
    save_file(tensors, str(native / "bilm.safetensors"))
    with pytest.raises(WeightsError, match=f"'{name}' is stored as torch.int32"):
        load_bilm(native)


def test_a_damaged_pipeline_names_its_file(allennlp_dir, tmp_path):
    nlp, _, _ = tagger_pipeline(allennlp_dir)
    nlp.to_disk(tmp_path / "pipeline")
    model_file = tmp_path / "pipeline" / "elmo" / "model"
    data = bytearray(model_file.read_bytes())
    data[len(data) // 2] ^= 0xFF
    model_file.write_bytes(bytes(data))
    with pytest.raises(DamagedFileError, match=str(model_file)):
        spacy.load(tmp_path / "pipeline")


@pytest.mark.parametrize("key, value", [("truncate_chars", "5"), ("truncate_chars", 0), ("lowercase", "false")])
def test_token_vocab_json_values_of_the_wrong_type(native, key, value):
    """`"truncate_chars": "5"` loaded, then failed at embed() with a TypeError; a string `lowercase` was
    read as true."""
    meta = json.loads((native / "elmo.json").read_text())
    meta["sha256"].pop("token_vocab.json")
    (native / "elmo.json").write_text(json.dumps(meta))
    vocabularies = json.loads((native / "token_vocab.json").read_text())
    vocabularies["word_table"][key] = value
    (native / "token_vocab.json").write_text(json.dumps(vocabularies))
    with pytest.raises(WeightsError, match=f"{key} must be"):
        load_bilm(native)
