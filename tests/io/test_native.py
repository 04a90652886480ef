import json

import numpy
import pytest
import torch

from spacy_elmo.bilm import BiLM, BiLMConfig, Vocabulary
from spacy_elmo.bilm.language_model import SoftmaxHead
from spacy_elmo.io import WeightsError, load_bilm, load_model, load_native, save_native
from tests.bilm.word_tables import layers, table_bilm


def _tiny():
    config = BiLMConfig(lstm_dim=8, projection_dim=4, n_layers=2, filters=((1, 4), (2, 4)), n_highway=1,
                        char_embedding_dim=4)
    model = BiLM(config)
    model.reset_parameters(0)
    return model


def test_round_trip_with_vocab_and_softmax(tmp_path):
    model = _tiny()
    vocab = Vocabulary(["<S>", "</S>", "<UNK>", "hello"])
    head = SoftmaxHead(4, 4, "sampled", n_samples=2)
    head.reset_parameters(torch.Generator().manual_seed(0))
    save_native(tmp_path, model, vocab, head, {"note": "x"})
    loaded = load_model(tmp_path)
    assert loaded.vocab == vocab and loaded.metadata == {"note": "x"}
    for name, value in head.state_dict().items():
        torch.testing.assert_close(loaded.head.state_dict()[name], value)
    numpy.testing.assert_array_equal(loaded.bilm.embed([["hello", "x"]])[0], model.embed([["hello", "x"]])[0])
    assert loaded.language_model().head.kind == "sampled"


def test_without_softmax(tmp_path):
    model = _tiny()
    save_native(tmp_path, model)
    assert load_model(tmp_path).head is None
    numpy.testing.assert_array_equal(load_bilm(tmp_path).embed([["a"]])[0], model.embed([["a"]])[0])


def test_future_format_version_is_refused(tmp_path):
    save_native(tmp_path, _tiny())
    meta = json.loads((tmp_path / "elmo.json").read_text())
    meta["format_version"] = 99
    (tmp_path / "elmo.json").write_text(json.dumps(meta))
    with pytest.raises(WeightsError, match="format_version 99 is not supported"):
        load_bilm(tmp_path)


@pytest.mark.parametrize("breakage,message", [
    ("corrupt", "checksum mismatch"),
    ("missing", "bilm.safetensors: missing"),
    ("shape", "tensors do not match|has shape"),
    ("meta", "not valid JSON"),
    ("not_ours", "not a spacy-elmo model"),
])
def test_broken_native_files(tmp_path, breakage, message):
    save_native(tmp_path, _tiny())
    weights = tmp_path / "bilm.safetensors"
    if breakage == "corrupt":
        weights.write_bytes(weights.read_bytes()[:100])
    elif breakage == "missing":
        weights.unlink()
    elif breakage == "shape":
        meta = json.loads((tmp_path / "elmo.json").read_text())
        meta["bilm"]["lstm_dim"] = 16
        (tmp_path / "elmo.json").write_text(json.dumps(meta))
    elif breakage == "meta":
        (tmp_path / "elmo.json").write_text("{")
    elif breakage == "not_ours":
        (tmp_path / "elmo.json").write_text('{"format": "other"}')
    with pytest.raises(WeightsError, match=message):
        load_bilm(tmp_path)


def test_corruption_without_checksum_is_still_caught(tmp_path):
    """Files from before checksums (or edited by hand) are still parsed defensively."""
    save_native(tmp_path, _tiny())
    meta = json.loads((tmp_path / "elmo.json").read_text())
    del meta["sha256"]
    (tmp_path / "elmo.json").write_text(json.dumps(meta))
    weights = tmp_path / "bilm.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(WeightsError, match="not a readable safetensors"):
        load_bilm(tmp_path)


def test_atomic_write_leaves_no_temporary_files(tmp_path):
    save_native(tmp_path, _tiny())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bilm.safetensors", "elmo.json"]


def test_float16_storage_halves_the_files_and_loads_as_float32(tmp_path):
    """float16 storage: half the bytes, loaded into float32. On the embedded model the layers
    move by 3.5e-3 at most (measured on 300 held-out sentences), above the 1e-3 the shipped
    weights must keep, which is why its trained weights are stored in float32."""
    from spacy_elmo.io import load_model, save_native
    from spacy_elmo.resources import default_model_path

    model = load_model(default_model_path())
    save_native(tmp_path / "f32", model.bilm, storage_dtype="float32")
    save_native(tmp_path / "f16", model.bilm, storage_dtype="float16")
    size = lambda d: (d / "bilm.safetensors").stat().st_size  # noqa: E731
    assert size(tmp_path / "f16") < 0.51 * size(tmp_path / "f32")
    half = load_model(tmp_path / "f16")
    assert all(p.dtype == torch.float32 for p in half.bilm.parameters())
    sentences = [["The", "bank", "of", "the", "river", "flooded", "."],
                 ["She", "deposited", "cash", "at", "the", "bank"]]
    for a, b in zip(model.bilm.embed(sentences), half.bilm.embed(sentences)):
        assert 0 < float(abs(a - b).max()) < 1e-2
    with pytest.raises(ValueError, match="storage_dtype"):
        save_native(tmp_path / "bad", model.bilm, storage_dtype="int8")


def test_native_round_trip_and_float16_table(tmp_path):
    bilm = table_bilm()
    save_native(tmp_path / "f32", bilm)
    loaded = load_native(tmp_path / "f32").bilm
    assert loaded.word_table_vocab == bilm.word_table_vocab
    for a, b in zip(layers(bilm), layers(loaded)):
        numpy.testing.assert_array_equal(a, b)

    save_native(tmp_path / "f16", bilm, table_dtype="float16")
    from safetensors import safe_open

    with safe_open(str(tmp_path / "f16" / "bilm.safetensors"), "pt") as f:
        assert f.get_tensor("token_encoder.word_table").dtype == torch.float16
        assert f.get_tensor("token_encoder.proj_weight").dtype == torch.float32
    half = load_native(tmp_path / "f16").bilm
    assert half.token_encoder.word_table.dtype == torch.float32
    torch.testing.assert_close(
        half.token_encoder.word_table, bilm.token_encoder.word_table.half().float(), rtol=0, atol=0
    )
    sizes = [(tmp_path / name / "bilm.safetensors").stat().st_size for name in ("f16", "f32")]
    assert sizes[0] < sizes[1]


def test_a_damaged_vocabulary_file_is_a_clear_error(tmp_path):
    save_native(tmp_path, table_bilm())
    path = tmp_path / "token_vocab.json"
    data = json.loads(path.read_text())
    data["word_table"]["words"].append("extra")
    path.write_text(json.dumps(data))
    with pytest.raises(WeightsError, match="checksum mismatch"):
        load_native(tmp_path)
