"""The token layer with a word table: x = projection([highway(char CNN); v(w)])."""
import json
from typing import Any, Dict

import numpy
import pytest
import torch

from spacy_elmo.bilm.config import BiLMConfig, OptionsError
from spacy_elmo.bilm.model import BiLM
from spacy_elmo.bilm.token_vocab import WordTableVocabulary
from spacy_elmo.io import WeightsError, export_published, load_native, save_native

WORDS = ["the", "bank", "river", "money", "of"]
SENTENCES = [["The", "bank", "of", "the", "river"], ["Money", "zzz"], ["bank"]]


def table_config(**changes) -> BiLMConfig:
    settings: Dict[str, Any] = dict(
        lstm_dim=16, projection_dim=8, n_layers=2, filters=((1, 4), (2, 6)), n_highway=1,
        max_characters_per_token=12, word_table_rows=len(WORDS), word_table_dim=6, word_table_specials=3,
    )
    settings.update(changes)
    return BiLMConfig(**settings)


def table_bilm(seed: int = 0, **changes) -> BiLM:
    vocab = WordTableVocabulary(WORDS, lowercase=True)
    bilm = BiLM(table_config(**changes), word_table_vocab=vocab)
    bilm.reset_parameters(seed)
    bilm.set_word_table(torch.randn(len(WORDS), 6, generator=torch.Generator().manual_seed(seed)))
    return bilm.eval()


def layers(bilm: BiLM, sentences=SENTENCES):
    with torch.no_grad():
        return [x.numpy() for x in bilm(sentences).unpadded()]


def test_shapes_and_the_table_enters_the_token_layer():
    bilm = table_bilm()
    out = layers(bilm)
    assert [x.shape for x in out] == [(3, 5, 16), (3, 2, 16), (3, 1, 16)]
    # a different table row for "bank" changes its token layer and nothing of "river"'s
    before = out[0]
    with torch.no_grad():
        bilm.token_encoder.word_table[WORDS.index("bank")] += 1.0
    after = layers(bilm)[0]
    assert not numpy.allclose(before[0, 1], after[0, 1])
    numpy.testing.assert_array_equal(before[0, 4], after[0, 4])


def test_lookup_lowercases_and_unknown_words_share_the_learned_unknown_row():
    bilm = table_bilm()
    vocab = bilm.word_table_vocab
    assert vocab.encode(["The", "BANK", "zzz", "qqq"]) == [0, 1, len(WORDS) + 2, len(WORDS) + 2]
    encoder = bilm.token_encoder
    rows = encoder.table_vectors(torch.tensor(vocab.encode(["zzz", "qqq", "river"])))
    torch.testing.assert_close(rows[0], encoder.word_specials[2])
    torch.testing.assert_close(rows[1], encoder.word_specials[2])
    torch.testing.assert_close(rows[2], encoder.word_table[2])


def test_table_is_frozen_by_default_and_the_learned_rows_train():
    bilm = table_bilm().train()
    encoder = bilm.token_encoder
    assert not encoder.word_table.requires_grad
    out = bilm(SENTENCES)
    out.layers.sum().backward()
    assert encoder.word_table.grad is None
    assert encoder.word_specials.grad is not None and encoder.word_specials.grad.abs().sum() > 0
    assert encoder.proj_weight.grad.abs().sum() > 0
    trainable = table_bilm(word_table_trainable=True).train()
    trainable(SENTENCES).layers.sum().backward()
    assert trainable.token_encoder.word_table.grad.abs().sum() > 0


def test_token_cache_gives_the_same_bits():
    bilm = table_bilm()
    plain = layers(bilm)
    bilm.enable_cache(words=["bank"])
    cached_first, cached_again = layers(bilm), layers(bilm)
    for a, b, c in zip(plain, cached_first, cached_again):
        numpy.testing.assert_array_equal(a, b)
        numpy.testing.assert_array_equal(a, c)


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


def test_published_export_refuses_a_table_and_writes_nothing(tmp_path):
    with pytest.raises(WeightsError, match="no place for a word table"):
        export_published(table_bilm(), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_config_without_a_table_has_the_published_tensors():
    plain = BiLM(table_config(word_table_rows=0, word_table_dim=0, word_table_specials=0))
    names = set(plain.state_dict())
    assert not any("word_" in name for name in names)
    assert plain.token_encoder.proj_weight.shape == (10, 8)
    assert table_bilm().token_encoder.proj_weight.shape == (16, 8)


def test_invalid_table_settings_are_named():
    with pytest.raises(OptionsError, match="word_table_dim is 0"):
        table_config(word_table_dim=0)
    with pytest.raises(OptionsError, match="word-input biLM"):
        table_config(use_character_inputs=False, n_tokens_vocab=5)
    with pytest.raises(ValueError, match="needs its vocabulary of 5 words"):
        BiLM(table_config())
