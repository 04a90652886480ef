"""Regression: native -> published -> native silently changed the numbers of a `boundary_strings` model.

A model pretrained in stream mode reads the tokens "<S>" and "</S>" as
sentence boundaries (`boundary_strings`, kept in elmo.json). The published
options have no place for it, so the exported copy read them as ordinary
words and embedded differently, though docs/cli.md says converting to
published and back gives the same numbers. Exporting such a model is now
refused before anything is written, as a model with a word table is.
"""
import pytest

from spacy_elmo.cli import app
from spacy_elmo.io import WeightsError, export_published, save_native

from ..cli.invoke import flat, runner
from ..io.model_server import tiny_bilm


def _stream_model():
    model = tiny_bilm(6)
    model.boundary_strings = True  # as `pretrain` in stream mode saves it
    return model


def test_export_refuses_a_boundary_strings_model(tmp_path):
    with pytest.raises(WeightsError, match="no place for boundary_strings") as info:
        export_published(_stream_model(), tmp_path / "pub")
    assert "native format" in str(info.value)
    assert not (tmp_path / "pub").exists()


def test_convert_to_published_refuses_it_and_writes_nothing(tmp_path):
    save_native(tmp_path / "native", _stream_model())
    result = runner.invoke(app, ["convert", str(tmp_path / "native"), str(tmp_path / "pub"), "--to", "published"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert "no place for boundary_strings" in flat(result)
    assert not (tmp_path / "pub").exists()
