"""`download`: a URL or catalogue name fetched once into the cache, and one message when it fails."""
import dataclasses
import json

from spacy_elmo.cli import app
from spacy_elmo.io.catalogue import CatalogueFile, catalogue, lookup
from spacy_elmo.io.sources import MARKER

from ..io.model_server import cache_entries, closed_port
from .invoke import runner


def test_download_fetches_once_and_says_where(cache, served):
    url = served.url("elmo.zip")
    result = runner.invoke(app, ["download", url])
    assert result.exit_code == 0, result.output
    (entry,) = cache_entries(cache)
    assert entry in " ".join(result.output.split())
    served.stop()
    result = runner.invoke(app, ["download", url, "--quiet"])  # offline now: from the cache
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(cache / "models" / entry)


def test_download_a_catalogue_name_into_a_given_cache(tmp_path, cache, served, monkeypatch):
    entry = dataclasses.replace(lookup("efml-de"), files=(CatalogueFile(served.url("elmo.zip")),))
    monkeypatch.setitem(catalogue(), "efml-de", entry)
    other = tmp_path / "offline-cache"
    result = runner.invoke(app, ["download", "efml-de", "--cache-dir", str(other), "-q"])
    assert result.exit_code == 0, result.output
    assert result.output.strip().startswith(str(other / "models")) and cache_entries(cache) == []


def test_download_failure_is_one_message(cache):
    url = f"http://127.0.0.1:{closed_port()}/elmo.zip"
    result = runner.invoke(app, ["download", url])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert url in result.output and "download failed" in result.output
    assert cache_entries(cache) == []
    result = runner.invoke(app, ["download", "no-such-model"])
    assert result.exit_code == 1 and "info --list" in " ".join(result.output.split())


def test_download_rechecks_an_entry_cached_without_checksums(cache, served):
    """An entry an older spacy-elmo fetched has no recorded checksums: it is loaded to check it, and said so."""
    url = served.url("elmo.zip")
    assert runner.invoke(app, ["download", url]).exit_code == 0
    (entry,) = cache_entries(cache)
    marker_path = cache / "models" / entry / MARKER
    marker = json.loads(marker_path.read_text())
    del marker["contents"]
    marker_path.write_text(json.dumps(marker))
    result = runner.invoke(app, ["download", url])
    assert result.exit_code == 0, result.output
    assert "recorded no checksums" in " ".join(result.output.split())
