"""Regression: a full disk or a forbidden folder while filling the download cache was misreported.

An OSError while unpacking into the cache fell into the catch-all for bad
archives ("the archive is truncated or corrupted"), and one while pooch
wrote a download into "download failed ... on a machine without network",
so the user was sent after the network or the archive instead of the disk.
A full disk, a quota, a read-only file system or a permission error while
writing the cache is now the cache's error: the folder, the reason, and to
free space or choose another cache. The errors are injected where the
writes happen, so the test needs no small or read-only file system.
"""
import errno
import tarfile
import zipfile

import pooch
import pytest

from spacy_elmo.io import WeightsError, resolve_source
from spacy_elmo.io.sources import MARKER

from ..io.model_server import cache_entries, make_tar, make_zip, published_dir, tiny_bilm

FULL = OSError(errno.ENOSPC, "No space left on device")
QUOTA = OSError(errno.EDQUOT, "Disk quota exceeded")
FORBIDDEN = PermissionError(errno.EACCES, "Permission denied")
READ_ONLY = OSError(errno.EROFS, "Read-only file system")


def _raising(error):
    def write(*args, **kwargs):
        raise error
    return write


def _nothing_left(cache):
    assert cache_entries(cache) == [] and not list(cache.rglob(MARKER))


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
@pytest.mark.parametrize("error,remedy", [(FULL, "free space there"), (QUOTA, "free space there"),
                                          (FORBIDDEN, "permissions"), (READ_ONLY, "permissions")])
def test_unpacking_a_local_archive_into_a_cache_that_refuses_it(tmp_path, cache, monkeypatch, kind, error, remedy):
    published = published_dir(tmp_path / "published", tiny_bilm(8))
    if kind == "zip":
        archive = make_zip(published, tmp_path / "elmo.zip")
        monkeypatch.setattr(zipfile.ZipFile, "extractall", _raising(error))
    else:
        archive = make_tar(published, tmp_path / "elmo.tar.gz")
        monkeypatch.setattr(tarfile.TarFile, "extractall", _raising(error))
    with pytest.raises(WeightsError) as info:
        resolve_source(str(archive), progress=False)
    message = str(info.value)
    assert "cannot write to the model cache" in message and error.strerror in message and remedy in message
    assert "truncated or corrupted" not in message and str(cache / "models") in message
    _nothing_left(cache)


@pytest.mark.parametrize("error", [FULL, FORBIDDEN])
def test_downloading_into_a_cache_that_refuses_it(tmp_path, cache, served, monkeypatch, error):
    monkeypatch.setattr(pooch.HTTPDownloader, "__call__", _raising(error))  # where pooch writes the file
    with pytest.raises(WeightsError) as info:
        resolve_source(served.url("elmo.zip"), progress=False)
    message = str(info.value)
    assert "cannot write to the model cache" in message and error.strerror in message
    assert "download failed" not in message and "without network" not in message
    _nothing_left(cache)
