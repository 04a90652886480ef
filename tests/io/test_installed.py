"""Finding an installed pipeline package's folder by name, without importing the package."""
import json

import pytest

from spacy_elmo.io.installed import installed_pipeline


def _pipeline(folder):
    folder.mkdir(parents=True)
    (folder / "config.cfg").write_text("[nlp]\n", encoding="utf-8")
    (folder / "meta.json").write_text("{}", encoding="utf-8")
    return folder


def _package(site, name, monkeypatch):
    package = site / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('imported')\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    return package


def test_the_folder_meta_json_names_wins_over_other_pipelines(tmp_path, monkeypatch):
    package = _package(tmp_path, "en_found_by_meta", monkeypatch)
    (package / "meta.json").write_text(json.dumps({"lang": "en", "name": "found_by_meta", "version": "2.0.0"}))
    _pipeline(package / "en_found_by_meta-1.0.0")
    named = _pipeline(package / "en_found_by_meta-2.0.0")
    assert installed_pipeline("en_found_by_meta") == named


@pytest.mark.parametrize("meta", [None, "not json", json.dumps({"lang": "en"})])
def test_without_a_usable_meta_json_the_only_inner_pipeline(tmp_path, monkeypatch, meta):
    package = _package(tmp_path, "en_only_inner", monkeypatch)
    if meta is not None:
        (package / "meta.json").write_text(meta, encoding="utf-8")
    inner = _pipeline(package / "anything-0.1")
    (package / "data").mkdir()
    assert installed_pipeline("en_only_inner") == inner


def test_a_package_that_is_itself_the_pipeline(tmp_path, monkeypatch):
    package = _package(tmp_path, "en_flat_pipeline", monkeypatch)
    _pipeline(package / "inner")
    (package / "config.cfg").write_text("[nlp]\n", encoding="utf-8")
    (package / "meta.json").write_text("{}", encoding="utf-8")
    assert installed_pipeline("en_flat_pipeline") == package


@pytest.mark.parametrize("name", ["en_two_inner", "en_no_inner", "json", "not a name", "a.b", "", "no_such_module_x"])
def test_anything_else_is_none(tmp_path, monkeypatch, name):
    two = _package(tmp_path, "en_two_inner", monkeypatch)
    _pipeline(two / "one-1")
    _pipeline(two / "two-1")
    _package(tmp_path, "en_no_inner", monkeypatch)
    assert installed_pipeline(name) is None
