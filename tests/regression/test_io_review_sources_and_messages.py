"""Regression: a review of the model sources found wrong models and wrong remedies at the edges.

- An empty or blank source ("", "  ": an unset environment variable) was Path(""), the working
  directory: whatever model lay there loaded. It is now a WeightsError.
- A damaged ELMoForManyLangs pickle said "not a plain torch state dict ... runs no code" (a hint at an
  unsafe file) and, as a plain WeightsError, never got the cache's "download --force" remedy; a file
  cut short is now a DamagedFileError, and the safe loader's refusal keeps its own message.
- A folder holding no model (a pretraining output above its model-best) said "no options file
  (options.json) found"; it now says what a model folder holds and names the subfolders that hold one.
- spacy-elmo.NativeLoader.v1 / PublishedLoader.v1 read a cached download without the remedy
  load_model gives ("re-export the model", impossible for a download).
- A symbolic link in a zip (zip -y) was extracted as a small file holding its target's name; it is
  refused as in a tar.
- A damaged entry in a read-only cache without locks/ was reported as the cache's write error.
- A word table beyond float16 stored with table_dtype="float16" said "store the model in float32".
- export_published(..., vocab_name="words.txt") wrote a folder its own loader could not read: such a name is
  refused, and one the loaders find ("*vocab*.txt") is read back.
- A second look: a legacy torch pickle cut inside its header still read as an unsafe file.
"""
import errno
import os
import pathlib
import pickle
import shutil
import stat
import zipfile

import pytest
import torch

from spacy_elmo.io import DamagedFileError, WeightsError, load_bilm, load_model, resolve_source
from spacy_elmo.io.manylangs import read_state
from spacy_elmo.io.published import export_published
from spacy_elmo.layers.loaders import NativeLoader
from tests.io.model_server import make_zip, native_dir, published_dir, tiny_bilm, use_cache


@pytest.fixture
def cache(tmp_path, monkeypatch):
    return use_cache(tmp_path, monkeypatch)


@pytest.fixture(scope="module")
def model():
    return tiny_bilm(seed=5)


@pytest.mark.parametrize("source", ["", "   "])  # (Path("") is Path("."): the working directory, asked for)
def test_an_empty_source_is_refused_not_the_working_directory(tmp_path, model, monkeypatch, source):
    published_dir(tmp_path, model)  # a model in the working directory, which must not load
    monkeypatch.chdir(tmp_path)
    for call in (load_bilm, load_model, resolve_source):
        with pytest.raises(WeightsError, match="empty model source"):
            call(source)


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_a_manylangs_pickle_cut_short_is_damaged_and_a_refused_one_is_not(tmp_path):
    path = tmp_path / "encoder.pkl"
    torch.save({"weight": torch.zeros(64)}, path)
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(DamagedFileError, match="unreadable or cut short"):
        read_state(path)
    legacy = tmp_path / "legacy.pkl"  # ELMoForManyLangs' format: five pickles, then the tensors' bytes
    torch.save({"weight": torch.zeros(64)}, legacy, _use_new_zipfile_serialization=False)
    whole = legacy.read_bytes()
    for cut in range(1, len(whole), 5):  # the header's pickles included
        legacy.write_bytes(whole[:cut])
        with pytest.raises(DamagedFileError):
            read_state(legacy)
    path.write_bytes(pickle.dumps({"weight": print}))  # whole, but the safe loader refuses it: not damaged
    with pytest.raises(WeightsError) as refused:
        read_state(path)
    assert not isinstance(refused.value, DamagedFileError)


def test_a_folder_above_its_models_says_what_a_model_folder_holds(tmp_path, model):
    native_dir(tmp_path / "run" / "model-best", model)
    native_dir(tmp_path / "run" / "model-last", model)
    with pytest.raises(WeightsError) as caught:
        load_bilm(tmp_path / "run")
    message = str(caught.value)
    assert "expected a directory holding elmo.json" in message and "options.json) found" not in message
    assert "model-best, model-last hold a model" in message
    (tmp_path / "empty").mkdir()
    with pytest.raises(WeightsError, match="expected a directory holding elmo.json") as empty:
        load_bilm(tmp_path / "empty")
    assert "subfolder" not in str(empty.value)
    published = published_dir(tmp_path / "half", model)
    (published / "weights.hdf5").unlink()  # half a published model: the missing half is named
    with pytest.raises(WeightsError, match="no weight file"):
        load_bilm(published)


def _damage(directory):
    """Zero the end of a native model's weights, keeping size and modification time (the quick check
    cannot tell; the checksum in elmo.json can)."""
    weights = next(directory.glob("*.safetensors"))
    status = weights.stat()
    data = bytearray(weights.read_bytes())
    data[-8:] = bytes(8)
    weights.write_bytes(bytes(data))
    os.utime(weights, ns=(status.st_atime_ns, status.st_mtime_ns))


def test_the_native_loader_names_the_download_remedy_for_a_damaged_cached_copy(tmp_path, cache, model):
    archive = make_zip(native_dir(tmp_path / "native", model), tmp_path / "native.zip")
    _damage(resolve_source(str(archive)))
    with pytest.raises(DamagedFileError, match="--force"):
        NativeLoader(str(archive)).read()
    local = native_dir(tmp_path / "local", model)
    _damage(local)
    with pytest.raises(DamagedFileError) as caught:  # a local folder: nothing to fetch again
        NativeLoader(str(local)).read()
    assert "re-export" in str(caught.value) and "--force" not in str(caught.value)


def test_a_link_in_a_zip_is_refused(tmp_path, cache, model):
    directory = published_dir(tmp_path / "published", model)
    archive = tmp_path / "link.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(directory / "options.json", "options.json")
        zf.write(directory / "weights.hdf5", "store/lm_weights.hdf5")
        link = zipfile.ZipInfo("weights.hdf5")
        link.create_system = 3  # Unix, whose mode the upper bits of external_attr hold
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "store/lm_weights.hdf5")
    with pytest.raises(WeightsError, match="links are not allowed"):
        resolve_source(str(archive))


def test_a_damaged_entry_of_a_read_only_cache_is_reported_as_damaged(tmp_path, cache, model, monkeypatch):
    archive = make_zip(published_dir(tmp_path / "published", model), tmp_path / "published.zip")
    entry = resolve_source(str(archive))
    shutil.rmtree(cache / "locks")  # a cache copied without its locks/, then mounted read-only
    weights = entry / "weights.hdf5"
    weights.write_bytes(weights.read_bytes()[:-100])
    real_mkdir = pathlib.Path.mkdir

    def read_only(self, *args, **kwargs):
        if self.name == "locks":
            raise OSError(errno.EROFS, "Read-only file system", str(self))
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "mkdir", read_only)
    with pytest.raises(WeightsError) as caught:
        load_model(str(archive))
    assert "cannot write to the model cache" not in str(caught.value)
    assert "weights.hdf5" in str(caught.value)


def test_a_float16_tables_overflow_names_the_table_setting(tmp_path):
    from spacy_elmo.io import save_native
    from tests.bilm.word_tables import table_bilm

    bilm = table_bilm()
    with torch.no_grad():
        bilm.token_encoder.word_table[0, 0] = 1e5
    with pytest.raises(ValueError, match="store the word table in float32"):
        save_native(tmp_path / "model", bilm, storage_dtype="float32", table_dtype="float16")


def test_an_exported_vocabulary_under_another_name_loads_back(tmp_path):
    from spacy_elmo.bilm import BiLM, BiLMConfig, Vocabulary

    vocab = Vocabulary(["<S>", "</S>", "<UNK>", "the", "cat"])
    bilm = BiLM(BiLMConfig(lstm_dim=8, projection_dim=4, n_layers=1, use_character_inputs=False, n_tokens_vocab=5),
                vocab=vocab)
    bilm.reset_parameters(0)
    with pytest.raises(ValueError, match="vocab_name 'words.txt'"):
        export_published(bilm, tmp_path / "refused", vocab_name="words.txt")
    assert not (tmp_path / "refused").exists()
    export_published(bilm, tmp_path / "words", vocab_name="words-vocab.txt")
    loaded = load_bilm(tmp_path / "words")
    assert loaded.input_vocab == vocab
    torch.testing.assert_close(loaded.embed([["the", "cat"]])[0], bilm.embed([["the", "cat"]])[0])
