"""Regression: a process loading a cached model while `download --force` replaced that entry could
report the entry as damaged: the refresh moves the old files aside and renames the new ones in
(under the entry's lock), and a reader checking the files in between found them missing. A reader
whose check fails now looks again once the entry's lock is free, so it gets the new entry; an entry
that is really damaged is still reported as damaged, with the remedy."""
import pytest

from spacy_elmo.io import DamagedFileError, resolve_source
from spacy_elmo.io import sources
from tests.io.model_server import make_zip, published_dir, tiny_bilm, use_cache


@pytest.fixture
def archive(tmp_path, monkeypatch):
    use_cache(tmp_path, monkeypatch)
    return str(make_zip(published_dir(tmp_path / "published", tiny_bilm(seed=3)), tmp_path / "model.zip"))


def test_a_reader_meeting_a_refresh_gets_the_new_entry(archive, monkeypatch):
    entry = resolve_source(archive, progress=False)
    real_check = sources.check_entry
    calls = []

    def check_during_refresh(path, label, *args, **kwargs):
        calls.append(path)
        if len(calls) == 1:  # the reader's first look: `download --force` runs to its end meanwhile,
            monkeypatch.setattr(sources, "check_entry", real_check)
            assert resolve_source(archive, progress=False, refresh=True) == entry
            monkeypatch.setattr(sources, "check_entry", check_during_refresh)
            # and the reader saw the old files mid-move
            raise DamagedFileError(f"{path}/weights.hdf5: missing ({sources.damaged_entry_hint(label, path)})")
        return real_check(path, label, *args, **kwargs)

    monkeypatch.setattr(sources, "check_entry", check_during_refresh)
    assert resolve_source(archive, progress=False) == entry
    assert len(calls) == 2  # looked again under the lock, and the new entry is whole


def test_a_damaged_entry_is_still_reported(archive):
    entry = resolve_source(archive, progress=False)
    (entry / "weights.hdf5").write_bytes(b"not the weights")
    with pytest.raises(DamagedFileError, match="--force"):
        resolve_source(archive, progress=False)
