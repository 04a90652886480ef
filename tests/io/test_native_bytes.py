"""The native format as one blob of bytes: the directory's files, versioned and checksummed."""
import hashlib
import json
import struct

import numpy
import pytest
import torch

from spacy_elmo.bilm import Vocabulary
from spacy_elmo.bilm.language_model import SoftmaxHead
from spacy_elmo.io import (
    WeightsError,
    is_native_bytes,
    load_bilm,
    load_native,
    load_native_bytes,
    save_native,
    save_native_bytes,
)
from spacy_elmo.io.native import BYTES_MAGIC, FORMAT_VERSION
from tests.bilm.word_tables import SENTENCES, layers, table_bilm

WORDS = [["The", "bank", "of", "the", "river", "."], ["Money", "zzz"]]


def _same_layers(a, b, sentences=WORDS):
    for x, y in zip(a.embed(sentences), b.embed(sentences)):
        numpy.testing.assert_array_equal(x, y)


def _blob(files, version=FORMAT_VERSION, extra_size=0):
    """A blob of the documented layout, for hand-made headers (`extra_size`: added to each listed size)."""
    header = json.dumps({"format": "spacy-elmo", "format_version": version,
                         "files": [[name, len(content) + extra_size] for name, content in files]}).encode()
    body = struct.pack("<Q", len(header)) + header + b"".join(content for _, content in files)
    return BYTES_MAGIC + hashlib.sha256(body).digest() + body


def test_published_weights_round_trip(allennlp_dir):
    bilm = load_bilm(allennlp_dir)
    data = save_native_bytes(bilm)
    assert is_native_bytes(data)
    loaded = load_native_bytes(data).bilm
    assert loaded.config == bilm.config
    _same_layers(bilm, loaded)


def test_the_embedded_model_round_trips():
    bilm = load_bilm()
    _same_layers(bilm, load_native_bytes(save_native_bytes(bilm)).bilm)


def test_a_word_table_round_trips_with_its_vocabulary():
    bilm = table_bilm()
    loaded = load_native_bytes(save_native_bytes(bilm)).bilm
    assert loaded.word_table_vocab == bilm.word_table_vocab
    for a, b in zip(layers(bilm), layers(loaded)):
        numpy.testing.assert_array_equal(a, b)
    assert loaded.embed(SENTENCES)[0].shape == (3, 5, 16)


def test_a_softmax_and_vocabulary_round_trip(allennlp_dir):
    bilm = load_bilm(allennlp_dir)
    vocab = Vocabulary(["<S>", "</S>", "<UNK>", "bank", "river"])
    head = SoftmaxHead(len(vocab), bilm.config.projection_dim, "sampled", n_samples=2)
    head.reset_parameters(torch.Generator().manual_seed(0))
    loaded = load_native_bytes(save_native_bytes(bilm, vocab, head, {"note": "x"}))
    assert loaded.vocab == vocab and loaded.metadata == {"note": "x"}
    for name, value in head.state_dict().items():
        torch.testing.assert_close(loaded.head.state_dict()[name], value)
    assert load_native_bytes(save_native_bytes(bilm, vocab, head), with_softmax=False).head is None


def test_the_blob_holds_the_files_of_the_directory(allennlp_dir, tmp_path):
    """Same bytes per file as save_native writes (elmo.json's checksums included), so one format."""
    bilm = table_bilm()
    save_native(tmp_path, bilm)
    data = save_native_bytes(bilm)
    start = len(BYTES_MAGIC) + 32
    (length,) = struct.unpack("<Q", data[start:start + 8])
    header = json.loads(data[start + 8:start + 8 + length])
    offset = start + 8 + length
    names = []
    for name, size in header["files"]:
        assert data[offset:offset + size] == (tmp_path / name).read_bytes(), name
        names.append(name)
        offset += size
    assert sorted(names) == sorted(p.name for p in tmp_path.iterdir())
    assert "token_vocab.json" in names and header["format_version"] == FORMAT_VERSION
    _same_layers(load_native(tmp_path).bilm, load_native_bytes(data).bilm, SENTENCES)


@pytest.mark.parametrize("position", [0.1, 0.5, 0.99])
def test_a_changed_byte_is_a_checksum_error(allennlp_dir, position):
    data = bytearray(save_native_bytes(load_bilm(allennlp_dir)))
    data[len(BYTES_MAGIC) + int(position * (len(data) - len(BYTES_MAGIC)))] ^= 0xFF
    with pytest.raises(WeightsError, match="checksum mismatch"):
        load_native_bytes(bytes(data))


@pytest.mark.parametrize("keep", [0.0, 0.5, 0.999])
def test_a_truncated_blob_is_one_clear_error(allennlp_dir, keep):
    data = save_native_bytes(load_bilm(allennlp_dir))
    cut = data[: max(len(BYTES_MAGIC) + 1, int(len(data) * keep))]
    with pytest.raises(WeightsError, match="truncated"):
        load_native_bytes(cut, source="my blob")


def test_bytes_of_another_kind_are_refused():
    with pytest.raises(WeightsError, match="not a spacy-elmo native model"):
        load_native_bytes(b"\x82\xa6config\x80\xa5state\xc4\x00")


def test_a_newer_format_version_asks_for_an_upgrade(allennlp_dir):
    with pytest.raises(WeightsError, match="upgrade spacy-elmo"):
        load_native_bytes(_blob([("elmo.json", b"{}")], version=FORMAT_VERSION + 1))


@pytest.mark.parametrize("name", ["../elmo.json", "/tmp/x", "other.bin"])
def test_only_the_files_of_a_native_model_are_accepted(name):
    with pytest.raises(WeightsError, match="unexpected file"):
        load_native_bytes(_blob([("elmo.json", b"{}"), (name, b"x")]))


@pytest.mark.parametrize("files,extra_size", [
    ([("elmo.json", b"{}")], 5),  # sizes past the end
    ([("elmo.json", b"{}")], -1),  # bytes left over
    ([("bilm.safetensors", b"x")], 0),  # no elmo.json
])
def test_a_header_that_does_not_match_its_contents(files, extra_size):
    with pytest.raises(WeightsError, match="does not describe"):
        load_native_bytes(_blob(files, extra_size=extra_size))


def test_contents_that_do_not_load_name_the_blob_not_a_temporary_file(allennlp_dir, tmp_path):
    save_native(tmp_path, load_bilm(allennlp_dir))
    meta = (tmp_path / "elmo.json").read_bytes()
    with pytest.raises(WeightsError, match=r"^my blob/bilm.safetensors: missing"):
        load_native_bytes(_blob([("elmo.json", meta)]), source="my blob")
