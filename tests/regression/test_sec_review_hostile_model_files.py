"""Regression: what a hostile (or badly edited) model file or archive could do to whoever loads it.

- A native model's elmo.json sized the network before its weights were looked at: `lstm_dim` 10**5
  beside a weights file of four bytes took 2 GB before failing; 10**9 escaped as torch's allocator
  RuntimeError. The ELMoForManyLangs loader built from config.json before reading its pickles (3.4 GB
  for `dim` 10**5 beside files of one byte). Shapes are now checked on the meta device first.
- That meta-device check found a second defect: oneDNN's and int8's once-per-process probes made
  their tensors on the default device, so a first probe under `torch.device("meta")` (or a user's
  `torch.set_default_device("cuda")`) turned the fast backends off for the whole process.
- An HDF5 file of 29 kB declaring datasets it never wrote was read into gigabytes of zeros.
- Archives: a 1 MB member unpacked to a 1 GB file kept in the cache; a sparse tar member declared
  gigabytes it did not store; 30,000 empty members took a minute. Now refused before anything is written.
- A duplicate 100 MB word in vocab.txt became a 100 MB error message, naming the file twice.
"""
import json
import shutil
import subprocess
import tarfile

import h5py
import numpy
import pytest
import torch

from spacy_elmo.bilm.engine import int8, onednn_ops
from spacy_elmo.io import DamagedFileError, WeightsError, load_bilm, load_model, resolve_source, save_native
from spacy_elmo.io import sources
from spacy_elmo.io.native import load_native_bytes, save_native_bytes

from ..io.manylangs_model import write_manylangs_model
from ..io.model_server import make_tar, make_zip, published_dir, tiny_bilm, use_cache


def _edited(directory, edit):
    meta = json.loads((directory / "elmo.json").read_text())
    meta.pop("sha256")
    edit(meta)
    (directory / "elmo.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("setting,value", [("lstm_dim", 10**9), ("projection_dim", 10**6), ("lstm_dim", 10**5)])
def test_an_elmo_json_asking_for_more_than_its_weights_is_refused_before_building(tmp_path, setting, value):
    save_native(tmp_path, tiny_bilm(seed=1))
    _edited(tmp_path, lambda meta: meta["bilm"].update({setting: value}))
    with pytest.raises(WeightsError, match="the config implies"):
        load_bilm(tmp_path)


def test_a_softmax_asking_for_more_than_its_file_is_refused(tmp_path):
    from spacy_elmo.bilm import Vocabulary
    from spacy_elmo.bilm.language_model import SoftmaxHead

    model = tiny_bilm(seed=1)
    words = ["<S>", "</S>", "<UNK>"] + [f"w{i}" for i in range(10**5 - 3)]
    save_native(tmp_path, model, Vocabulary(words), SoftmaxHead(10**5, model.config.projection_dim, "sampled", 2))
    (tmp_path / "softmax.safetensors").write_bytes(b"junk")
    _edited(tmp_path, lambda meta: None)
    with pytest.raises(DamagedFileError, match="softmax.safetensors: not a readable safetensors file"):
        load_model(tmp_path)


def test_a_serialized_blob_asking_for_more_than_its_weights_is_refused(tmp_path):
    save_native(tmp_path, tiny_bilm(seed=1))
    _edited(tmp_path, lambda meta: meta["bilm"].update(lstm_dim=10**9))
    blob = save_native_bytes(tiny_bilm(seed=1))
    # the same blob with the edited elmo.json (its digest recomputed, as a hostile writer would)
    from spacy_elmo.io import native

    files = [(name, (tmp_path / name).read_bytes()) for name in native._listed_files(json.loads(
        (tmp_path / "elmo.json").read_text()))]
    header = json.dumps({"format": native.FORMAT_NAME, "format_version": native.FORMAT_VERSION,
                         "files": [[n, len(c)] for n, c in files]}).encode()
    import hashlib

    body = b"".join([native._LENGTH.pack(len(header)), header] + [c for _, c in files])
    hostile = native.BYTES_MAGIC + hashlib.sha256(body).digest() + body
    assert load_native_bytes(blob).bilm is not None
    with pytest.raises(WeightsError, match="the config implies"):
        load_native_bytes(hostile)


@pytest.mark.parametrize("dim", [10**9, 10**5])
def test_a_manylangs_config_asking_for_more_than_its_pickles_is_refused_before_building(tmp_path, dim):
    model = write_manylangs_model(tmp_path / "m")
    arch = json.loads((model / "cnn_tiny.json").read_text())
    arch["encoder"]["dim"] = dim
    (model / "cnn_tiny.json").write_text(json.dumps(arch))
    with pytest.raises(WeightsError, match="the config implies"):
        load_bilm(model)


def test_the_backend_probes_run_on_the_cpu_whatever_the_default_device(monkeypatch):
    answers = {"onednn": onednn_ops.works(), "int8": int8.works()}
    monkeypatch.setattr(onednn_ops, "_WORKS", None)
    monkeypatch.setattr(int8, "_WORKS", None)
    with torch.device("meta"):
        assert {"onednn": onednn_ops.works(), "int8": int8.works()} == answers


def test_an_hdf5_file_declaring_data_it_never_wrote_is_refused(tmp_path):
    directory = published_dir(tmp_path / "published", tiny_bilm(seed=3))
    with h5py.File(directory / "weights.hdf5", "a") as f:
        name = "RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0"
        shape = f[name].shape
        del f[name]
        f.create_dataset(name, shape=shape, dtype="f4", chunks=True)  # declared, never written
    with pytest.raises(DamagedFileError, match=r"W_0' declares [\d,]+ bytes but stores 0"):
        load_bilm(directory)


def test_an_archive_that_expands_a_hundredfold_is_refused_before_writing(tmp_path, monkeypatch):
    cache = use_cache(tmp_path, monkeypatch)
    directory = published_dir(tmp_path / "published", tiny_bilm(seed=3))
    (directory / "zz_padding.bin").write_bytes(bytes(8 * 2**20))  # 8 MB of zeros: about 8 kB deflated
    import zipfile

    archive = tmp_path / "elmo.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(directory.iterdir()):
            zf.write(path, path.name)
    with pytest.raises(WeightsError, match="unpack to .* more than 100x"):
        resolve_source(archive)
    assert not list((cache / "models").glob("*/zz_padding.bin"))


def test_an_archive_with_more_members_than_a_model_is_refused(tmp_path, monkeypatch):
    use_cache(tmp_path, monkeypatch)
    monkeypatch.setattr(sources, "MAX_MEMBERS", 1)  # the published layout has two files
    archive = make_tar(published_dir(tmp_path / "published", tiny_bilm(seed=3)), tmp_path / "elmo.tar.gz")
    with pytest.raises(WeightsError, match="members, more than a model has"):
        resolve_source(archive)


def test_a_model_archive_within_the_limits_still_unpacks(tmp_path, monkeypatch):
    use_cache(tmp_path, monkeypatch)
    model = tiny_bilm(seed=3)
    archive = make_zip(published_dir(tmp_path / "published", model), tmp_path / "elmo.zip")
    assert load_bilm(resolve_source(archive)).config == model.config


@pytest.mark.skipif(shutil.which("tar") is None, reason="GNU tar writes the sparse member")
def test_a_sparse_tar_member_is_refused(tmp_path, monkeypatch):
    use_cache(tmp_path, monkeypatch)
    directory = published_dir(tmp_path / "published", tiny_bilm(seed=3))
    with open(directory / "holes.bin", "wb") as f:
        f.truncate(2**30)  # a gigabyte of holes
    archive = tmp_path / "elmo.tar"
    subprocess.run(["tar", "--sparse", "-cf", str(archive), "-C", str(directory), "."], check=True)
    with tarfile.open(archive) as tf:
        if not any(m.issparse() for m in tf.getmembers()):
            pytest.skip("this tar wrote no sparse member (its file system reports no holes)")
    with pytest.raises(WeightsError, match="a sparse file"):
        resolve_source(archive)


def test_a_huge_duplicate_word_gives_a_short_error_naming_the_file_once(tmp_path):
    from spacy_elmo.bilm import Vocabulary

    word = "x" * 10**6
    save_native(tmp_path, tiny_bilm(seed=1), Vocabulary(["<S>", "</S>", "<UNK>", word]))
    (tmp_path / "vocab.txt").write_text(f"<S>\n</S>\n<UNK>\n{word}\n{word}\n")
    _edited(tmp_path, lambda meta: None)
    with pytest.raises(WeightsError) as caught:
        load_model(tmp_path)
    message = str(caught.value)
    assert len(message) < 400 and message.count("vocab.txt") == 1 and "duplicate word" in message


@pytest.mark.parametrize(
    "filters", [{"scaleoffset": 6}, {"compression": "gzip"}, {"shuffle": True, "compression": "lzf"}]
)
def test_weights_stored_through_hdf5_filters_still_load(tmp_path, filters):
    """A second look: the stored-bytes check took a scale-offset dataset (fewer bytes than declared,
    `compression` None) for one never written."""
    model = tiny_bilm(seed=3)
    directory = published_dir(tmp_path / "published", model)
    with h5py.File(directory / "weights.hdf5", "a") as f:
        name = "RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0"
        data = f[name][...]
        del f[name]
        f.create_dataset(name, data=data, chunks=True, **filters)
    got = load_bilm(directory).embed([["hello", "world"]])[0]
    expected = model.embed([["hello", "world"]])[0]
    assert got.shape == expected.shape
    if "scaleoffset" not in filters:  # lossless
        numpy.testing.assert_array_equal(got, expected)
