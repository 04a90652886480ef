"""Regression: `download` reported success for a cache entry whose files were damaged after it was fetched.

Only the entry's marker file was looked at, though `download` promises to
check that the model loads, and nothing could fetch it again short of
deleting the folder by hand; loading the entry said "checksum mismatch ...
re-export the model", advice that does not apply to a download. `download`
now loads the entry, names the damage and the remedy, and `--force` fetches
it anew, replacing the entry once the new copy loads."""
import numpy

from spacy_elmo.cli import app
from spacy_elmo.io import WeightsError, load_bilm, load_model, save_native

from ..cli.invoke import runner
from ..io.model_server import cache_entries, make_zip, tiny_bilm


def _damage(entry):
    (weights,) = [p for p in entry.rglob("*.hdf5") if p.is_file()] or list(entry.rglob("bilm.safetensors"))
    weights.write_bytes(weights.read_bytes()[:100])


def test_a_damaged_entry_is_reported_and_force_fetches_it_again(cache, served):
    url = served.url("elmo.zip")
    assert runner.invoke(app, ["download", url]).exit_code == 0
    (name,) = cache_entries(cache)
    entry = cache / "models" / name
    _damage(entry)
    result = runner.invoke(app, ["download", url])
    output = " ".join(result.output.split())
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "is damaged" in output and "--force" in output
    try:
        load_model(url)
    except WeightsError as err:
        assert "download" in str(err) and "--force" in str(err)
    else:
        raise AssertionError("a damaged entry loaded")
    result = runner.invoke(app, ["download", url, "--force"])
    assert result.exit_code == 0, result.output
    assert cache_entries(cache) == [name]  # replaced in place; nothing left beside it
    sentence = [["a", "bank"]]
    numpy.testing.assert_array_equal(load_bilm(url).embed(sentence)[0], tiny_bilm(1).embed(sentence)[0])


def test_force_keeps_a_good_entry_when_the_new_copy_does_not_load(cache, served, tmp_path):
    url = served.url("native.zip")
    save_native(tmp_path / "native", tiny_bilm(2))
    make_zip(tmp_path / "native", served.root / "native.zip")
    assert runner.invoke(app, ["download", url]).exit_code == 0
    (served.root / "native.zip").write_bytes(b"not a zip")
    result = runner.invoke(app, ["download", url, "--force"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    sentence = [["a", "bank"]]
    numpy.testing.assert_array_equal(load_bilm(url).embed(sentence)[0], tiny_bilm(2).embed(sentence)[0])


def test_force_keeps_the_old_entry_when_the_new_one_cannot_be_moved_in(cache, served, monkeypatch):
    import os

    from spacy_elmo.io import sources

    url = served.url("elmo.zip")
    assert runner.invoke(app, ["download", url]).exit_code == 0
    real = os.replace

    def refused_rename(src, dst):
        if ".partial-" in str(src):  # the verified new copy, into the entry's place
            raise PermissionError(13, "Permission denied")
        return real(src, dst)

    monkeypatch.setattr(sources.os, "replace", refused_rename)
    result = runner.invoke(app, ["download", url, "--force"])
    assert result.exit_code == 1 and "Permission denied" in result.output
    monkeypatch.undo()
    (name,) = cache_entries(cache)
    sentence = [["a", "bank"]]
    numpy.testing.assert_array_equal(load_bilm(url).embed(sentence)[0], tiny_bilm(1).embed(sentence)[0])
