"""ELMoForManyLangs' layout: loading, the reference's char ids, parity with its own code, safety."""
import json
import pickle

import numpy
import pytest
import torch

from spacy_elmo.io import WeightsError, is_manylangs, load_model, load_native, save_native
from spacy_elmo.io.manylangs import load_manylangs, read_dictionary

from .manylangs_model import ARCHITECTURE, write_manylangs_model

# Chinese and English, words in and out of word.dic, characters outside char.dic (大, Z),
# a token longer than max_characters_per_token - 2 = 8 characters (cut, as the reference does)
SENTENCES = [
    ["我们", "在", "银行", "旁边", "的", "河岸", "上", "坐着", "。"],
    ["他", "去", "了", "银行"],
    ["the", "bank", "of", "the", "river", "."],
    ["大", "Zebra", "abcdefghijklmnop", "钱"],
    ["钱"],
]


@pytest.fixture
def model_dir(tmp_path):
    return write_manylangs_model(tmp_path / "zh")


def embed(bilm, sentences=SENTENCES):
    with torch.no_grad():
        return [layers.numpy() for layers in bilm(sentences).unpadded()]


def test_layout_is_detected_and_loads(model_dir):
    assert is_manylangs(model_dir)
    loaded = load_model(model_dir)
    assert loaded.metadata["format"] == "elmoformanylangs"
    out = embed(loaded.bilm)
    assert [x.shape for x in out] == [(3, len(s), 16) for s in SENTENCES]
    assert all(numpy.isfinite(x).all() for x in out)


def test_parity_with_the_reference_package(model_dir):
    """Expected layers from elmoformanylangs' own Embedder, its state reset before each sentence."""
    pytest.importorskip("elmoformanylangs", reason="the reference package (pip install elmoformanylangs)")
    from elmoformanylangs import Embedder

    reference = Embedder(str(model_dir), batch_size=1)
    expected = []
    for sentence in SENTENCES:
        reference.model.encoder._states = None  # its encoder carries state from sentence to sentence
        expected.append(reference.sents2elmo([sentence], output_layer=-2)[0])
    ours = embed(load_manylangs(model_dir))
    for sentence, want, got in zip(SENTENCES, expected, ours):
        assert got.shape == want.shape, sentence
        numpy.testing.assert_allclose(got, want, rtol=0, atol=1e-5, err_msg=str(sentence))


def test_char_and_word_ids_are_the_reference_ones(model_dir):
    pytest.importorskip("elmoformanylangs", reason="the reference package (pip install elmoformanylangs)")
    from elmoformanylangs.elmo import read_list
    from elmoformanylangs.frontend import create_one_batch

    bilm = load_manylangs(model_dir)
    arch = ARCHITECTURE
    char2id = {c: i for i, c in enumerate(read_dictionary(model_dir / "char.dic"))}
    word2id = {w: i for i, w in enumerate(read_dictionary(model_dir / "word.dic"))}
    for sentence in SENTENCES:
        data, _ = read_list([sentence], arch["token_embedder"]["max_characters_per_token"])
        words, chars, _, _ = create_one_batch(data, word2id, char2id, arch, sort=False)
        ours_chars = bilm.char_encoder.encode(sentence)  # rows: <bos>, <eos>, tokens
        ours_chars = numpy.concatenate([ours_chars[:1], ours_chars[2:], ours_chars[1:2]]) - 1  # stored +1
        numpy.testing.assert_array_equal(ours_chars, chars[0].numpy())
        vocab = bilm.word_table_vocab
        ours_words = [vocab.bos_id] + vocab.encode(sentence) + [vocab.eos_id]
        assert ours_words == words[0].tolist()


def test_quirks_are_reproduced(model_dir):
    bilm = load_manylangs(model_dir)
    dictionary = bilm.char_dictionary
    row = bilm.char_encoder.ids("ab")
    # begin-of-word slot holds <eow>'s id and the end slot <bow>'s (create_one_batch's lookup)
    assert row[0] == dictionary.index["<eow>"] and row[3] == dictionary.index["<bow>"]
    assert row[1] == dictionary.index["a"] and row[4] == dictionary.index["<pad>"]
    # words are looked up after the cut to max_characters_per_token - 2 characters
    assert bilm.word_table_vocab.key("abcdefghijklmnop") == "abcdefgh"


def test_convert_to_native_gives_the_same_bits(model_dir, tmp_path):
    bilm = load_manylangs(model_dir)
    save_native(tmp_path / "native", bilm)
    again = load_native(tmp_path / "native").bilm
    for a, b in zip(embed(bilm), embed(again)):
        numpy.testing.assert_array_equal(a, b)


def test_a_crafted_pickle_runs_nothing(model_dir, tmp_path):
    marker = tmp_path / "ran"

    class WritesMarker:
        def __reduce__(self):
            return (marker.write_text, ("pwned",))

    with open(model_dir / "encoder.pkl", "wb") as handle:
        pickle.dump({"forward_layer_0.input_linearity.weight": WritesMarker()}, handle)
    with pytest.raises(WeightsError, match="weights_only=True"):
        load_manylangs(model_dir)
    assert not marker.exists()


def test_broken_layouts_are_clear_errors(model_dir):
    (model_dir / "token_embedder.pkl").write_bytes(b"\x80\x04truncated")
    with pytest.raises(WeightsError, match="token_embedder.pkl"):
        load_manylangs(model_dir)
    (model_dir / "token_embedder.pkl").unlink()
    with pytest.raises(WeightsError, match="missing \\['token_embedder.pkl'\\]"):
        load_manylangs(model_dir)


def test_architecture_not_found_names_the_path(model_dir):
    (model_dir / "cnn_tiny.json").unlink()
    with pytest.raises(WeightsError, match="cnn_tiny.json"):
        load_manylangs(model_dir)


def test_mismatched_weights_name_the_tensor(tmp_path):
    directory = write_manylangs_model(tmp_path / "m")
    arch = json.loads((directory / "cnn_tiny.json").read_text())
    arch["encoder"]["dim"] = 32
    (directory / "cnn_tiny.json").write_text(json.dumps(arch))
    with pytest.raises(WeightsError, match="input_linearity.weight' has shape"):
        load_manylangs(directory)


def test_malformed_dictionary_line(model_dir):
    with open(model_dir / "char.dic", "a", encoding="utf-8") as handle:
        handle.write("x\ty\tz\n")
    with pytest.raises(WeightsError, match="char.dic:.*entry<TAB>id"):
        load_manylangs(model_dir)
