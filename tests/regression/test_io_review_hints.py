"""Regression: misleading remedies in the model-source errors.

- "on a machine without network, copy a cache ..." was added to every failed
  download, an HTTP 404 or 500 included, where the network works and the URL
  or the server is the problem; an HTTP error now names the status and the
  URL, and only a failed connection (or a timeout) gets the offline remedy.
- A local archive whose files do not load was called "the downloaded files".
- A cache that cannot be written always said "set SPACY_ELMO_CACHE", even
  when SPACY_ELMO_CACHE already named that cache (or the cache was given
  explicitly); the remedy now fits how the cache was chosen.
"""
import errno
import http.server
import threading
import zipfile
from pathlib import Path

import pooch
import pytest

from spacy_elmo.io import WeightsError, resolve_source
from spacy_elmo.io import sources

OFFLINE_HINT = "without network"


class _Broken(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802  (the base class's name)
        self.send_error(500, "Internal Server Error")

    def log_message(self, format, *args):  # noqa: A002
        pass


def test_a_404_names_the_status_and_not_the_offline_remedy(cache, served):
    url = served.url("absent.zip")
    with pytest.raises(WeightsError) as info:
        resolve_source(url, progress=False)
    message = str(info.value)
    assert message.startswith(url) and "HTTP 404" in message and OFFLINE_HINT not in message


def test_a_500_names_the_status_and_not_the_offline_remedy(cache):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Broken)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/elmo.zip"
        with pytest.raises(WeightsError) as info:
            resolve_source(url, progress=False)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    message = str(info.value)
    assert message.startswith(url) and "HTTP 500" in message and OFFLINE_HINT not in message


def test_a_local_archive_that_does_not_load_is_not_called_downloaded(tmp_path, cache):
    archive = tmp_path / "notes.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("notes/readme.txt", "no weights here")
    with pytest.raises(WeightsError, match="the archive's files do not load as an ELMo model") as info:
        resolve_source(str(archive), progress=False)
    assert "downloaded" not in str(info.value)


def _refuse_writes_under(monkeypatch, folder: Path):
    real = Path.mkdir

    def mkdir(self, *args, **kwargs):
        if self.resolve().is_relative_to(folder.resolve()):
            raise PermissionError(errno.EACCES, "Permission denied")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(sources.Path, "mkdir", mkdir)


def test_an_unwritable_cache_that_spacy_elmo_cache_names(tmp_path, cache, served, monkeypatch):
    _refuse_writes_under(monkeypatch, cache)
    with pytest.raises(WeightsError) as info:
        resolve_source(served.url("elmo.zip"), progress=False)
    message = str(info.value)
    assert "cannot write to the model cache (Permission denied)" in message
    assert f"SPACY_ELMO_CACHE is set to {cache}" in message and "point it at a writable folder" in message
    assert "; set SPACY_ELMO_CACHE" not in message


def test_an_unwritable_cache_given_explicitly(tmp_path, cache, served, monkeypatch):
    explicit = tmp_path / "explicit"
    _refuse_writes_under(monkeypatch, explicit)
    with pytest.raises(WeightsError) as info:
        resolve_source(served.url("elmo.zip"), cache=explicit, progress=False)
    message = str(info.value)
    assert str(explicit) in message and "use a writable cache directory" in message
    assert "SPACY_ELMO_CACHE" not in message


def test_an_unwritable_default_cache(tmp_path, cache, served, monkeypatch):
    default = tmp_path / "user-cache"
    monkeypatch.delenv("SPACY_ELMO_CACHE")
    monkeypatch.setattr(pooch, "os_cache", lambda name: default)
    _refuse_writes_under(monkeypatch, default)
    with pytest.raises(WeightsError) as info:
        resolve_source(served.url("elmo.zip"), progress=False)
    assert "set SPACY_ELMO_CACHE to a writable folder" in str(info.value)
