"""Regression: four ways weight files could be wrong without an error (a code review, 2026-12-07).

- A downloaded or unpacked native model was checked by loading it without its softmax: an archive
  whose softmax file was damaged (or cut off, a plain tar reading a cut as its end) entered the
  cache as complete, and `download --force` accepted the same bytes again.
- A compressed HDF5 dataset that was never written (a crashed writer) stores no bytes and read as
  zeros: only uncompressed ones were refused.
- A model holding NaN or infinite weights (a diverged run) was saved and exported without a word,
  over a good one, and then no loader read it back.
- A float64 safetensors value beyond float32's range was checked before the conversion, so it
  loaded as an infinity.
"""
import json

import h5py
import pytest
import torch
from safetensors.torch import load_file, save_file

from spacy_elmo.bilm.language_model import SoftmaxHead
from spacy_elmo.bilm.vocab import Vocabulary
from spacy_elmo.io import DamagedFileError, WeightsError, load_model, resolve_source
from spacy_elmo.io.checksum import sha256_file
from spacy_elmo.io.native import load_native, save_native, save_native_bytes
from spacy_elmo.io.published import export_published, load_published
from spacy_elmo.io.sources import MARKER

from ..io.model_server import cache_entries, make_tar, tiny_bilm, use_cache

WORDS = ["<S>", "</S>", "<UNK>", "the", "cat", "sat"]


@pytest.fixture
def with_softmax(tmp_path):
    """A tiny native model with its softmax (what pretraining writes)."""
    model = tiny_bilm(seed=5)
    head = SoftmaxHead(len(WORDS), model.config.projection_dim, "full")
    head.reset_parameters(torch.Generator().manual_seed(0))
    return save_native(tmp_path / "native", model, vocab=Vocabulary(WORDS), head=head)


def test_an_archive_with_a_damaged_softmax_is_not_cached(tmp_path, monkeypatch, with_softmax):
    cache = use_cache(tmp_path, monkeypatch)
    softmax = with_softmax / "softmax.safetensors"
    data = bytearray(softmax.read_bytes())
    data[-3] ^= 0xFF
    softmax.write_bytes(bytes(data))
    archive = make_tar(with_softmax, tmp_path / "damaged.tar.gz")
    with pytest.raises(WeightsError, match="softmax.safetensors: checksum mismatch"):
        resolve_source(str(archive))
    assert cache_entries(cache) == [] and not list(cache.rglob(MARKER))


def test_an_archive_without_its_listed_softmax_is_not_cached(tmp_path, monkeypatch, with_softmax):
    cache = use_cache(tmp_path, monkeypatch)
    (with_softmax / "softmax.safetensors").unlink()  # as a tar cut before its last member reads
    archive = make_tar(with_softmax, tmp_path / "cut.tar.gz")
    with pytest.raises(WeightsError, match="softmax.safetensors: missing"):
        resolve_source(str(archive))
    assert cache_entries(cache) == []


def test_a_whole_archive_still_caches_and_loads_with_its_softmax(tmp_path, monkeypatch, with_softmax):
    use_cache(tmp_path, monkeypatch)
    archive = make_tar(with_softmax, tmp_path / "whole.tar.gz")
    assert load_model(str(archive)).head is not None


@pytest.mark.parametrize("chunked_only", [False, True], ids=["compressed-never-written", "chunks-missing"])
def test_an_unwritten_compressed_or_chunked_dataset_is_refused(tmp_path, chunked_only):
    model = tiny_bilm(seed=1)
    options, weights = export_published(model, tmp_path / "published")
    with h5py.File(weights, "a") as f:
        name = next(n for n in _datasets(f) if f[n].ndim == 2 and f[n].shape[0] >= 4)
        shape, dtype = f[name].shape, f[name].dtype
        del f[name]
        if chunked_only:  # compressed, one chunk of two written: the other reads as zeros
            dataset = f.create_dataset(name, shape, dtype, chunks=(shape[0] // 2,) + shape[1:], compression="gzip")
            dataset[: shape[0] // 2] = 1.0
        else:
            f.create_dataset(name, shape, dtype, compression="gzip")
    with pytest.raises(DamagedFileError, match=f"'{name}' (declares .* stores none|stores 1 of its 2 chunks)"):
        load_published(options, weights)


def _datasets(group, prefix=""):
    for key, item in group.items():
        if isinstance(item, h5py.Dataset):
            yield prefix + key
        else:
            yield from _datasets(item, prefix + key + "/")


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_model_with_nan_or_inf_weights_is_not_saved_nor_exported(tmp_path, bad):
    model = tiny_bilm(seed=2)
    good = save_native(tmp_path / "model", model)
    before = sha256_file(good / "bilm.safetensors")
    with torch.no_grad():
        dict(model.named_parameters())["lstm.weight_proj.0"].view(-1)[0] = bad
    for save in (lambda: save_native(tmp_path / "model", model), lambda: save_native_bytes(model),
                 lambda: export_published(model, tmp_path / "published")):
        with pytest.raises(WeightsError, match="NaN or infinite values.*not (saved|exported)"):
            save()
    assert sha256_file(good / "bilm.safetensors") == before  # the good model is still there, loadable
    load_native(good)
    assert not (tmp_path / "published").exists() or not any((tmp_path / "published").iterdir())


def test_a_float64_value_beyond_float32_is_refused_on_load(tmp_path):
    directory = save_native(tmp_path / "model", tiny_bilm(seed=4))
    path = directory / "bilm.safetensors"
    state = load_file(str(path))
    name = sorted(state)[0]
    state = {key: value.double() for key, value in state.items()}
    state[name].view(-1)[0] = 1e300
    save_file(state, str(path))
    meta = json.loads((directory / "elmo.json").read_text())
    meta["sha256"]["bilm.safetensors"] = sha256_file(path)
    (directory / "elmo.json").write_text(json.dumps(meta))
    with pytest.raises(WeightsError, match=f"'{name}' contains NaN or infinite values"):
        load_native(directory)
