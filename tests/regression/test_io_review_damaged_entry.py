"""Regression: a damaged cached model loaded silently, and `download`'s re-check called it fine.

Only native models carry checksums (in elmo.json), so a published or
ELMoForManyLangs entry whose weights had a bit flipped loaded with other
numbers, `download` (which promises to check a cached entry) reported
success, and a deleted file was reported as a directory without weights,
without the `--force` remedy. The download marker now records each file's
size, modification time and sha256 when the entry enters the cache; every
use checks sizes (and hashes a file whose time changed), `download` hashes
every file.
"""
import os

import h5py
import numpy
import pytest

from spacy_elmo.cli import app
from spacy_elmo.io import DamagedFileError, load_bilm, resolve_source

from ..cli.invoke import flat, runner
from ..io.model_server import make_zip, tiny_bilm

SENTENCE = [["a", "bank"]]


def _entry(url):
    return resolve_source(url, progress=False)


def _flip_a_weight(entry):
    """One bit of one LSTM weight changed in place: same size; the time moves as with any write."""
    weights = entry / "weights.hdf5"
    with h5py.File(weights, "r") as f:
        offset = f["RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0"].id.get_offset()
    data = bytearray(weights.read_bytes())
    data[offset + 3] ^= 0x20
    stat = weights.stat()
    weights.write_bytes(bytes(data))
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # deterministic: the time moved
    return weights, stat


def test_a_flipped_bit_fails_loading_with_the_remedy(cache, served):
    url = served.url("elmo.zip")
    entry = _entry(url)
    weights, _ = _flip_a_weight(entry)
    with pytest.raises(DamagedFileError, match="checksum mismatch") as info:
        load_bilm(url)
    message = str(info.value)
    assert str(weights) in message and "--force" in message and url in message
    result = runner.invoke(app, ["download", url])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "checksum mismatch" in flat(result) and "--force" in flat(result)
    assert runner.invoke(app, ["download", url, "--force"]).exit_code == 0
    numpy.testing.assert_array_equal(load_bilm(url).embed(SENTENCE)[0], tiny_bilm(1).embed(SENTENCE)[0])


def test_damage_that_keeps_size_and_time_is_found_by_download(cache, served):
    """Loading checks sizes and times only (it must stay fast); `download` hashes every file."""
    url = served.url("elmo.zip")
    entry = _entry(url)
    weights, before = _flip_a_weight(entry)
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))  # bit rot: nothing about the file changed
    load_bilm(url)  # documented: the cheap check cannot see it
    result = runner.invoke(app, ["download", url])
    assert result.exit_code == 1 and "Traceback" not in result.output
    text = flat(result)
    assert "checksum mismatch" in text and str(weights) in text and "--force" in text


@pytest.mark.parametrize("damage", ["deleted", "cut short"])
def test_a_missing_or_cut_file_is_damage_with_the_remedy(cache, served, damage):
    url = served.url("elmo.zip")
    weights = _entry(url) / "weights.hdf5"
    if damage == "deleted":
        weights.unlink()
    else:
        stat = weights.stat()
        weights.write_bytes(weights.read_bytes()[:-100])
        os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with pytest.raises(DamagedFileError, match="missing" if damage == "deleted" else "cut short") as info:
        load_bilm(url)
    assert "--force" in str(info.value)
    for args in (["download", url], ["info", url]):
        result = runner.invoke(app, args)
        assert result.exit_code == 1 and "Traceback" not in result.output
        assert str(weights) in flat(result) and "--force" in flat(result)


def test_an_elmoformanylangs_entry_is_checked_too(tmp_path, cache):
    from ..io.manylangs_model import write_manylangs_model

    archive = make_zip(write_manylangs_model(tmp_path / "zh.model"), tmp_path / "179.zip", prefix="zh.model/")
    entry = resolve_source(str(archive))
    encoder = entry / "encoder.pkl"
    data = bytearray(encoder.read_bytes())
    data[-20] ^= 0x01
    encoder.write_bytes(bytes(data))
    os.utime(encoder, ns=(0, 1_000_000_000))
    with pytest.raises(DamagedFileError, match="checksum mismatch"):
        load_bilm(str(archive))
    assert runner.invoke(app, ["download", str(archive)]).exit_code == 1
