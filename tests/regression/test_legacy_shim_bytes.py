"""Pipelines saved before the shim's bytes became the native format's still load.

Regression: `layers/shim.py` used to write the biLM as its own msgpack map
(config, vocabularies, safetensors state; no version, no checksum). It now
writes the native format's bytes; `_read_legacy` reads the old map. The old
writer is reproduced here as it was, so the test does not depend on the code
that replaced it.
"""
import numpy
import pytest
import spacy
import srsly

from spacy_elmo.io import WeightsError, load_bilm, save_native
from spacy_elmo.layers.shim import BatchedBiLM, deserialize_bilm
from tests.bilm.word_tables import table_bilm

TEXTS = ["The bank of the river .", "Money in the bank !"]


def old_serialize(module) -> bytes:
    """The shim's serializer before the native format (spacy_elmo/layers/shim.py, `_serialize`)."""
    from safetensors.torch import save

    if module is None:
        return srsly.msgpack_dumps({"empty": True})
    bilm = module.bilm
    state = {k: v.detach().cpu().contiguous() for k, v in bilm.state_dict().items()}
    payload = {
        "config": bilm.config.to_dict(),
        "boundary_strings": bilm.boundary_strings,
        "vocab": bilm.input_vocab.words if bilm.input_vocab is not None else None,
        "word_table_vocab": bilm.word_table_vocab.to_dict() if bilm.word_table_vocab is not None else None,
        "char_dictionary": bilm.char_dictionary.to_dict() if bilm.char_dictionary is not None else None,
        "state": save(state),
    }
    return srsly.msgpack_dumps(payload)


def shim_state(pipeline_dir) -> bytes:
    """The biLM's bytes inside a saved pipeline's elmo/model (thinc's envelope around the shim)."""
    model = srsly.msgpack_loads((pipeline_dir / "elmo" / "model").read_bytes())
    (shim,) = [shim for node in model["shims"] for shim in node]
    return srsly.msgpack_loads(shim)["state"]


def _old_pipeline(weights, path):
    """A pipeline on `weights`, saved to `path` as the old version wrote it."""
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(weights)})
    expected = [nlp(text)._.elmo for text in TEXTS]
    shim = nlp.get_pipe("elmo").model.layers[0].shims[0]
    shim._serialize_model = old_serialize
    nlp.to_disk(path)
    return nlp, expected


@pytest.fixture(params=["published", "word_table"])
def weights(request, allennlp_dir, tmp_path):
    if request.param == "published":
        return allennlp_dir
    save_native(tmp_path / "table", table_bilm())
    return tmp_path / "table"


def test_an_old_pipeline_loads_and_gives_the_same_layers(weights, tmp_path):
    nlp, expected = _old_pipeline(weights, tmp_path / "old")
    assert "config" in srsly.msgpack_loads(shim_state(tmp_path / "old"))  # the old layout, not the native format
    loaded = spacy.load(tmp_path / "old")
    for text, layers in zip(TEXTS, expected):
        numpy.testing.assert_array_equal(loaded(text)._.elmo, layers)
    old_bilm, new_bilm = nlp.get_pipe("elmo").bilm, loaded.get_pipe("elmo").bilm
    assert new_bilm.config == old_bilm.config and new_bilm.word_table_vocab == old_bilm.word_table_vocab


def test_an_old_pipeline_saved_again_uses_the_native_format(allennlp_dir, tmp_path):
    from spacy_elmo.io import is_native_bytes

    _, expected = _old_pipeline(allennlp_dir, tmp_path / "old")
    spacy.load(tmp_path / "old").to_disk(tmp_path / "new")
    assert is_native_bytes(shim_state(tmp_path / "new"))
    numpy.testing.assert_array_equal(spacy.load(tmp_path / "new")(TEXTS[0])._.elmo, expected[0])


def test_the_old_empty_marker_keeps_what_the_shim_holds():
    assert deserialize_bilm(None, old_serialize(None), "cpu") is None


def test_an_old_payload_that_does_not_load_is_a_weights_error(allennlp_dir):
    payload = srsly.msgpack_loads(old_serialize(BatchedBiLM(load_bilm(allennlp_dir))))
    payload["state"] = payload["state"][:100]
    with pytest.raises(WeightsError, match="legacy payload that does not load"):
        deserialize_bilm(None, srsly.msgpack_dumps(payload), "cpu")
    with pytest.raises(WeightsError, match="neither the native format nor"):
        deserialize_bilm(None, srsly.msgpack_dumps({"something": "else"}), "cpu")
