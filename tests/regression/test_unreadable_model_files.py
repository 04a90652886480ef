"""Regression: a model file or folder this user may not read (`chmod -R 644` on a folder, a file of
mode 000) gave a raw PermissionError traceback from `load_bilm` and `convert`, and an unreadable
weights.hdf5 was called a damaged file (for a download, with the remedy of fetching it again). It is
now one WeightsError naming the file and the access to give. (The tests run as any user, root
included, so the refusal is injected where the file is opened.)"""
import errno
from pathlib import Path

import pytest

from spacy_elmo.io import DamagedFileError, WeightsError, load_bilm
from spacy_elmo.io import native
from spacy_elmo.layers.loaders import read_weights


def _denied(path):
    raise PermissionError(errno.EACCES, "Permission denied", str(path))


def test_an_unreadable_native_file_is_named(tmp_path, monkeypatch):
    folder = tmp_path / "model"
    native.save_native(folder, read_weights().bilm)
    monkeypatch.setattr(native, "sha256_file", _denied)
    with pytest.raises(WeightsError, match=r"model/\w+\.\w+: cannot read \(Permission denied\); give this user"):
        load_bilm(folder)


def test_an_unreadable_hdf5_is_no_damaged_file(allennlp_dir, tmp_path, monkeypatch):
    real_open = Path.open

    def open_(self, *args, **kwargs):
        if self.suffix == ".hdf5":
            _denied(self)
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", open_)
    with pytest.raises(WeightsError, match=r"\.hdf5: cannot read \(Permission denied\)") as caught:
        load_bilm(allennlp_dir)
    assert not isinstance(caught.value, DamagedFileError)
