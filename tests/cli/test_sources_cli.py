"""`download`, `info --list`, and the commands taking a URL or catalogue name for their model."""
import dataclasses
import json

import h5py
import pytest
from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.io.catalogue import CatalogueFile, catalogue, lookup

from ..io.model_server import cache_entries, closed_port, make_zip, published_dir, serve, tiny_bilm, use_cache

runner = CliRunner()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    return use_cache(tmp_path, monkeypatch)


@pytest.fixture
def served(tmp_path):
    """A server holding elmo.zip (a tiny published model, one folder down)."""
    for server in serve(tmp_path):
        make_zip(published_dir(tmp_path / "published", tiny_bilm(1)), server.root / "elmo.zip", prefix="elmo/")
        yield server


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


def test_info_list_prints_the_catalogue():
    result = runner.invoke(app, ["info", "--list"])
    assert result.exit_code == 0, result.output
    for name in ("small", "original-5.5b", "efml-zh", "nlpl-210", "licence"):
        assert name in result.output
    result = runner.invoke(app, ["info", "--list", "--json"])
    entries = json.loads(result.output)
    assert {e["name"] for e in entries} == set(catalogue())
    assert all("sha256" in f for e in entries for f in e["files"])


def test_info_and_embed_take_a_url(tmp_path, cache, served):
    url = served.url("elmo.zip")
    result = runner.invoke(app, ["info", url, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["path"] == url  # the progress bar went to stderr
    text = tmp_path / "in.txt"
    text.write_text("hello world\n")
    out = tmp_path / "out.hdf5"
    result = runner.invoke(app, ["embed", str(text), str(out), "--weights", url, "--quiet"])
    assert result.exit_code == 0, result.output
    with h5py.File(out, "r") as f:
        assert f["0"].shape == (3, 2, 8)
    result = runner.invoke(app, ["convert", url, str(tmp_path / "native")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "native" / "elmo.json").is_file()
