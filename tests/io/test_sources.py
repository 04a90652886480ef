"""Model sources: directories, archives, URLs, options + weights pairs and catalogue names, and the download cache.

Every download comes from a server on 127.0.0.1 started by the test; the
cache is a fresh SPACY_ELMO_CACHE per test.
"""
import dataclasses
import hashlib
import json
import os
import shutil
import zipfile

import numpy
import pytest

from spacy_elmo.io import DamagedFileError, WeightsError, load_bilm, load_model, resolve_source
from spacy_elmo.io.catalogue import CatalogueFile, catalogue, lookup
from spacy_elmo.io.sources import MARKER, cached_path, check_entry, parse_source

from .model_server import (
    SENTENCE, ModelServer, cache_entries, closed_port, make_tar, make_zip, native_dir, published_dir, serve,
    tar_with_member, tiny_bilm, use_cache,
)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    return use_cache(tmp_path, monkeypatch)


@pytest.fixture
def server(tmp_path):
    yield from serve(tmp_path)


@pytest.fixture(scope="module")
def model():
    return tiny_bilm(seed=3)


@pytest.fixture
def published(tmp_path, model):
    return published_dir(tmp_path / "published", model)


def same_numbers(directory, model):
    numpy.testing.assert_array_equal(load_bilm(directory).embed(SENTENCE)[0], model.embed(SENTENCE)[0])


def nothing_complete(cache):
    """After a failure: no entry at all under models/ (no half-written one, none marked complete)."""
    assert cache_entries(cache) == []
    assert not list(cache.rglob(MARKER))


# -- local directories and archives ---------------------------------------------------------------


@pytest.mark.parametrize("layout", ["published", "nlpl", "native"])
def test_a_directory_of_each_layout_is_used_in_place(tmp_path, cache, model, layout):
    if layout == "native":
        directory = native_dir(tmp_path / layout, model)
    else:
        directory = published_dir(tmp_path / layout, model, "model.hdf5" if layout == "nlpl" else "weights.hdf5")
    assert resolve_source(str(directory)) == directory
    assert resolve_source(directory) == directory
    same_numbers(directory, model)
    assert cache_entries(cache) == []


def test_an_elmoformanylangs_archive_unpacks_and_loads(tmp_path, cache):
    manylangs_model = pytest.importorskip("tests.io.manylangs_model")
    if not hasattr(__import__("spacy_elmo.io", fromlist=["is_manylangs"]), "is_manylangs"):
        pytest.skip("this build reads no ELMoForManyLangs layout")
    directory = tmp_path / "zh.model"
    manylangs_model.write_manylangs_model(directory)
    archive = make_zip(directory, tmp_path / "179.zip", prefix="zh.model/")
    resolved = resolve_source(str(archive))
    assert load_model(resolved, with_softmax=False).metadata["format"] == "elmoformanylangs"


@pytest.mark.parametrize("kind,prefix", [("zip", ""), ("tar.gz", ""), ("zip", "elmo_small/"),
                                         ("tar.gz", "release/elmo/")])
def test_a_local_archive_is_unpacked_once_into_the_cache(tmp_path, cache, model, published, kind, prefix):
    archive = tmp_path / f"model.{kind}"
    (make_zip if kind == "zip" else make_tar)(published, archive, prefix)
    resolved = resolve_source(str(archive))
    assert resolved.parent == cache / "models" and (resolved / MARKER).is_file()
    same_numbers(resolved, model)
    same_numbers(archive, model)  # load_model and load_bilm take the archive itself
    assert resolve_source(str(archive)) == resolved and cache_entries(cache) == [resolved.name]


def test_a_cached_archive_is_found_without_touching_it_again(tmp_path, cache, published):
    archive = make_zip(published, tmp_path / "model.zip")
    assert cached_path(str(archive)) is None
    resolved = resolve_source(str(archive))
    assert cached_path(str(archive)) == resolved


# -- URLs ------------------------------------------------------------------------------------------


def test_an_archive_url_is_fetched_once_and_then_used_offline(cache, model, published, server):
    make_zip(published, server.root / "elmo.zip", prefix="elmo/")
    url = server.url("elmo.zip")
    resolved = resolve_source(url, progress=False)
    same_numbers(resolved, model)
    assert cache_entries(cache) == [resolved.name] and not list(resolved.glob("*.zip"))  # archive not kept
    server.stop()
    assert resolve_source(url) == resolved
    same_numbers(url, model)


def test_a_tar_gz_url(cache, model, published, server):
    make_tar(published, server.root / "elmo.tar.gz")
    same_numbers(server.url("elmo.tar.gz"), model)


@pytest.mark.parametrize("form", ["space", "comma", "tuple", "reversed"])
def test_an_options_weights_pair_of_urls(cache, model, published, server, form):
    shutil.copy(published / "options.json", server.root / "elmo_options.json")
    shutil.copy(published / "weights.hdf5", server.root / "elmo_weights.hdf5")
    options, weights = server.url("elmo_options.json"), server.url("elmo_weights.hdf5")
    source = {"space": f"{options} {weights}", "comma": f"{options},{weights}", "tuple": (options, weights),
              "reversed": f"{weights}  {options}"}[form]
    resolved = resolve_source(source, progress=False)
    assert sorted(p.name for p in resolved.iterdir()) == sorted([MARKER, "options.json", "weights.hdf5"])
    same_numbers(resolved, model)
    assert resolve_source((options, weights)) == resolved  # every form is one cache entry


def test_a_catalogue_name_resolves_to_its_urls(cache, model, published, server, monkeypatch):
    shutil.copy(published / "options.json", server.root / "options.json")
    shutil.copy(published / "weights.hdf5", server.root / "weights.hdf5")
    entry = lookup("small")
    files = (CatalogueFile(server.url("options.json")), CatalogueFile(server.url("weights.hdf5")))
    monkeypatch.setitem(catalogue(), "small", dataclasses.replace(entry, files=files))
    resolved = resolve_source("small", progress=False)
    same_numbers(resolved, model)
    assert resolve_source("SMALL") == resolved
    assert resolve_source(f"{files[0].url} {files[1].url}") == resolved  # the name and its URLs share the entry
    server.stop()
    same_numbers("small", model)


def test_a_published_sha256_is_checked(cache, model, published, server, monkeypatch):
    archive = make_zip(published, server.root / "144.zip")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    entry = dataclasses.replace(lookup("efml-en"), files=(CatalogueFile(server.url("144.zip"), digest),))
    monkeypatch.setitem(catalogue(), "efml-en", entry)
    same_numbers("efml-en", model)
    assert lookup("nlpl-144") == entry  # the alias names the same model


def test_the_component_takes_a_url(cache, model, published, server):
    import spacy

    make_zip(published, server.root / "elmo.zip")
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": server.url("elmo.zip")})
    doc = nlp("hello small world")
    numpy.testing.assert_allclose(doc._.elmo, model.embed(SENTENCE)[0], atol=1e-6)


def test_the_source_loader_takes_a_url(cache, model, published, server):
    import spacy

    make_tar(published, server.root / "elmo.tgz")
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    loader = {"@model_loaders": "spacy-elmo.SourceLoader.v1", "source": server.url("elmo.tgz")}
    nlp.config["initialize"]["components"] = {"elmo": {"loader": loader}}
    nlp.initialize()
    numpy.testing.assert_allclose(nlp("hello small world")._.elmo, model.embed(SENTENCE)[0], atol=1e-6)


# -- failures ----------------------------------------------------------------------------------------


def test_an_unknown_name_is_one_clear_error(cache):
    message = "no-such-model: no such directory, archive, URL, catalogue name or installed pipeline package"
    with pytest.raises(WeightsError, match=message):
        resolve_source("no-such-model")


def test_an_unreachable_server(cache):
    url = f"http://127.0.0.1:{closed_port()}/elmo.zip"
    with pytest.raises(WeightsError, match="download failed") as info:
        resolve_source(url, progress=False)
    assert str(info.value).startswith(url) and "SPACY_ELMO_CACHE" in str(info.value)
    nothing_complete(cache)


def test_a_missing_file_on_the_server(cache, server):
    with pytest.raises(WeightsError, match="404"):
        resolve_source(server.url("absent.zip"), progress=False)
    nothing_complete(cache)


def test_a_truncated_archive(cache, published, server):
    data = make_zip(published, server.root / "full.zip").read_bytes()
    (server.root / "cut.zip").write_bytes(data[: len(data) // 2])
    with pytest.raises(WeightsError, match="truncated") as info:
        resolve_source(server.url("cut.zip"), progress=False)
    assert server.url("cut.zip") in str(info.value)
    nothing_complete(cache)


def test_a_truncated_tar_gz(cache, published, server):
    data = make_tar(published, server.root / "full.tar.gz").read_bytes()
    (server.root / "cut.tar.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(WeightsError, match="truncated or corrupted|not a readable"):
        resolve_source(server.url("cut.tar.gz"), progress=False)
    nothing_complete(cache)


def test_a_truncated_local_archive(tmp_path, cache, published):
    data = make_zip(published, tmp_path / "full.zip").read_bytes()
    (tmp_path / "cut.zip").write_bytes(data[:1000])
    with pytest.raises(WeightsError, match="cut.zip: not a readable"):
        resolve_source(str(tmp_path / "cut.zip"))
    nothing_complete(cache)


def test_a_wrong_checksum(cache, published, server, monkeypatch):
    make_zip(published, server.root / "144.zip")
    entry = dataclasses.replace(lookup("efml-en"), files=(CatalogueFile(server.url("144.zip"), "0" * 64),))
    monkeypatch.setitem(catalogue(), "efml-en", entry)
    with pytest.raises(WeightsError, match="does not match the published 0000") as info:
        resolve_source("efml-en", progress=False)
    assert server.url("144.zip") in str(info.value)
    nothing_complete(cache)


def test_an_archive_that_is_not_a_model(cache, server):
    with zipfile.ZipFile(server.root / "notes.zip", "w") as zf:
        zf.writestr("notes/readme.txt", "no weights here")
    with pytest.raises(WeightsError, match="do not load as an ELMo model") as info:
        resolve_source(server.url("notes.zip"), progress=False)
    assert str(info.value).startswith(server.url("notes.zip"))
    nothing_complete(cache)


def test_a_corrupted_weights_file(cache, published, server):
    data = bytearray((published / "weights.hdf5").read_bytes())
    (server.root / "options.json").write_bytes((published / "options.json").read_bytes())
    (server.root / "weights.hdf5").write_bytes(bytes(data[: len(data) // 3]))
    with pytest.raises(WeightsError, match="do not load"):
        resolve_source(f"{server.url('options.json')} {server.url('weights.hdf5')}", progress=False)
    nothing_complete(cache)


@pytest.mark.parametrize("member", ["../evil.txt", "model/../../evil.txt", "/tmp/evil.txt"])
@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_archive_members_outside_the_model_are_refused(tmp_path, cache, published, server, member, kind):
    archive = server.root / f"slip.{kind}"
    if kind == "zip":
        make_zip(published, archive)
        with zipfile.ZipFile(archive, "a") as zf:
            zf.writestr(member, "x")
    else:
        tar_with_member(archive, member)
    with pytest.raises(WeightsError, match="refused archive member"):
        resolve_source(server.url(archive.name), progress=False)
    assert not (tmp_path / "evil.txt").exists() and not (cache / "evil.txt").exists()
    nothing_complete(cache)


def test_links_in_a_tar_are_refused(tmp_path, cache, server):
    import tarfile

    with tarfile.open(server.root / "link.tar.gz", "w:gz") as tf:
        info = tarfile.TarInfo("model/options.json")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        tf.addfile(info)
    with pytest.raises(WeightsError, match="links are not allowed"):
        resolve_source(server.url("link.tar.gz"), progress=False)
    nothing_complete(cache)


def test_a_failure_leaves_an_earlier_good_entry_alone(cache, model, published, server):
    make_zip(published, server.root / "good.zip")
    good = resolve_source(server.url("good.zip"), progress=False)
    (server.root / "bad.zip").write_bytes(b"PK not really")
    with pytest.raises(WeightsError):
        resolve_source(server.url("bad.zip"), progress=False)
    assert cache_entries(cache) == [good.name]
    same_numbers(good, model)


# -- the entry's records: what later uses check ------------------------------------------------------


def test_the_marker_records_each_file(cache, model, published, server):
    make_zip(published, server.root / "elmo.zip")
    entry = resolve_source(server.url("elmo.zip"), progress=False)
    contents = json.loads((entry / MARKER).read_text())["contents"]
    assert set(contents) == {"options.json", "weights.hdf5"}
    for name, record in contents.items():
        assert record["size"] == (entry / name).stat().st_size
        assert record["mtime_ns"] == (entry / name).stat().st_mtime_ns
        assert record["sha256"] == hashlib.sha256((entry / name).read_bytes()).hexdigest()
    assert check_entry(entry, server.url("elmo.zip"), full=True) is True


def test_a_copy_without_file_times_is_hashed_and_loads(cache, model, published, server):
    """A cache copied with `cp -r` has new file times: each use hashes the files, they match, it loads."""
    make_zip(published, server.root / "elmo.zip")
    entry = resolve_source(server.url("elmo.zip"), progress=False)
    for path in entry.iterdir():
        os.utime(path, ns=(0, 1_000_000_000))
    assert check_entry(entry, server.url("elmo.zip")) is True
    same_numbers(server.url("elmo.zip"), model)


def test_an_entry_cached_without_records_is_used_as_it_is(cache, model, published, server):
    """Markers written before the records (an older spacy-elmo) hold no contents: unverified, no error."""
    make_zip(published, server.root / "elmo.zip")
    entry = resolve_source(server.url("elmo.zip"), progress=False)
    marker = json.loads((entry / MARKER).read_text())
    del marker["contents"]
    (entry / MARKER).write_text(json.dumps(marker))
    assert check_entry(entry, server.url("elmo.zip"), full=True) is False
    same_numbers(server.url("elmo.zip"), model)


def test_a_garbled_marker_is_damage(cache, published, server):
    make_zip(published, server.root / "elmo.zip")
    entry = resolve_source(server.url("elmo.zip"), progress=False)
    (entry / MARKER).write_text('{"contents": {"weights.hdf5": {"size": "big"}}}')
    with pytest.raises(DamagedFileError, match="unreadable record for 'weights.hdf5'.*--force"):
        load_bilm(server.url("elmo.zip"))
    (entry / MARKER).write_text('{"contents": ')
    with pytest.raises(DamagedFileError, match="not valid JSON.*--force"):
        load_bilm(server.url("elmo.zip"))


def test_parsing_never_touches_the_network(cache):
    assert parse_source("small").files == lookup("small").files
    assert parse_source("http://127.0.0.1:1/x.zip").kind == "remote"
    with pytest.raises(WeightsError, match="two URLs"):
        parse_source(("http://127.0.0.1:1/a.json",))


def test_server_fixture_binds_loopback_only(tmp_path):
    server = ModelServer(tmp_path)
    try:
        assert server._server is not None and server._server.server_address[0] == "127.0.0.1"
    finally:
        server.stop()
