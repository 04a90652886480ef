"""Regression: scripts/train.py kept a finished run whose static vectors had changed.

run_settings.json recorded the overrides as given, so `--paths.vectors training/static_vectors`
was the string alone: after the `static-vectors` step rebuilt that folder with other vectors, the
vectors baseline said "has finished with the same settings; nothing to do" and the report compared
ELMo with a baseline trained on the old ones. An override naming a file or folder is now recorded
by contents (`overrides_by_contents`, the `path_identity` of the corpora): a changed folder is
refused as a changed setting, naming it and --overwrite; the same folder copied elsewhere is not.

The run is the tiny tagger of test_train_script_exit_status_and_settings, in this process, with a
three-word vectors pipeline that [initialize] loads.
"""
import shutil

import numpy
import pytest
import spacy

from spacy_elmo.resumable_training import overrides_by_contents, path_identity
from tests.regression.test_train_script_exit_status_and_settings import CONFIG, _train
from tests.regression.test_train_script_exit_status_and_settings import project  # noqa: F401 (a fixture)

WITH_VECTORS = CONFIG.replace("[paths]\n", "[paths]\nvectors = null\n", 1) + """
[initialize]
vectors = ${paths.vectors}
"""


def _vectors(path, scale: float) -> None:
    """A blank English pipeline whose vectors hold three words (rows scaled by `scale`)."""
    nlp = spacy.blank("en")
    for i, word in enumerate(("the", "cat", "sat")):
        nlp.vocab.set_vector(word, numpy.full((4,), scale * (i + 1), dtype="float32"))  # type: ignore[arg-type]
    if path.exists():
        shutil.rmtree(path)
    nlp.to_disk(path)


@pytest.fixture
def vectors_project(project):  # noqa: F811
    config, train, dev = project
    config.write_text(WITH_VECTORS, encoding="utf-8")
    return config, train, dev


def test_a_changed_vectors_folder_is_a_changed_setting(monkeypatch, capsys, vectors_project, tmp_path):
    vectors, output = tmp_path / "static_vectors", tmp_path / "out"
    _vectors(vectors, 1.0)
    assert _train(monkeypatch, vectors_project, output, "--paths.vectors", vectors) == 0
    capsys.readouterr()
    assert _train(monkeypatch, vectors_project, output, "--paths.vectors", vectors) == 0
    assert "has finished with the same settings; nothing to do" in capsys.readouterr().out

    _vectors(vectors, 2.0)  # the static-vectors step rebuilt the folder with other vectors
    assert _train(monkeypatch, vectors_project, output, "--paths.vectors", vectors) == 1
    err = capsys.readouterr().err
    assert "overrides.paths.vectors:" in err and f"{vectors} (" in err and "--overwrite" in err
    assert len(err.strip().splitlines()) == 1
    assert _train(monkeypatch, vectors_project, output, "--paths.vectors", vectors, "--overwrite") == 0
    capsys.readouterr()

    # the same contents under another path are the same setting
    moved = tmp_path / "elsewhere" / "vectors"
    shutil.copytree(vectors, moved)
    assert _train(monkeypatch, vectors_project, output, "--paths.vectors", moved) == 0
    assert "nothing to do" in capsys.readouterr().out


def test_only_path_overrides_naming_what_exists_are_recorded_by_contents(tmp_path):
    folder = tmp_path / "v"
    folder.mkdir()
    (folder / "a").write_text("x")
    recorded = overrides_by_contents({"paths.vectors": str(folder), "paths.init_tok2vec": str(tmp_path / "nope"),
                                      "paths.train": str(folder), "training.max_steps": 4,
                                      "corpora.train.path": str(folder / "a"), "nlp.lang": "en"},
                                     skip=("paths.train",))
    assert recorded["paths.vectors"] == path_identity(folder)
    assert recorded["corpora.train.path"] == path_identity(folder / "a")
    assert recorded["paths.init_tok2vec"] == str(tmp_path / "nope")  # not there: as given
    assert recorded["paths.train"] == str(folder) and recorded["training.max_steps"] == 4
    assert recorded["nlp.lang"] == "en"
