"""Regression: a directory holding two models' files loaded the wrong one, without a word.

`convert X DIR --to published` into a directory that held a native model
wrote options.json + weights.hdf5 beside the old elmo.json and reported
success; `load_model(DIR)` then read elmo.json (native comes first) and gave
the old model. Writers now refuse to add a second layout to a directory, the
loader refuses a directory holding two, and a directory missing a layout's
key file is told which one (it was told "no options file"). An interrupted
published export left `weights.hdf5.tmp` behind; each file is now written
atomically."""
import h5py
import numpy
import pytest

from spacy_elmo.cli import app
from spacy_elmo.io import WeightsError, export_published, load_bilm, load_model, save_native

from ..cli.invoke import runner
from ..io.manylangs_model import write_manylangs_model
from ..io.model_server import tiny_bilm


def test_export_into_a_native_model_directory_is_refused(tmp_path, allennlp_dir):
    target = tmp_path / "model"
    save_native(target, tiny_bilm(0))
    with pytest.raises(WeightsError, match="already holds another model"):
        export_published(load_bilm(allennlp_dir), target)
    result = runner.invoke(app, ["convert", str(allennlp_dir), str(target), "--to", "published"])
    assert result.exit_code == 1 and "already holds another model" in result.output
    assert "Traceback" not in result.output
    assert sorted(p.name for p in target.iterdir() if p.suffix in (".json", ".hdf5")) == ["elmo.json"]


def test_native_save_into_a_published_directory_is_refused(tmp_path, allennlp_dir):
    target = tmp_path / "model"
    export_published(load_bilm(allennlp_dir), target)
    with pytest.raises(WeightsError, match="already holds another model"):
        save_native(target, tiny_bilm(0))
    assert not (target / "elmo.json").exists()


def test_a_directory_with_two_layouts_does_not_load(tmp_path, allennlp_dir):
    target = tmp_path / "model"
    save_native(target, tiny_bilm(0))
    for name in ("options.json", "lm_weights.hdf5"):
        (target / name).write_bytes((allennlp_dir / name).read_bytes())
    with pytest.raises(WeightsError, match="2 model layouts .*native: .*published: "):
        load_model(target)


def test_a_missing_key_file_is_named(tmp_path):
    native = tmp_path / "native"
    save_native(native, tiny_bilm(0))
    (native / "elmo.json").unlink()
    with pytest.raises(WeightsError, match="incomplete native model .*bilm.safetensors but no elmo.json"):
        load_model(native)
    manylangs = write_manylangs_model(tmp_path / "zh")
    (manylangs / "encoder.pkl").unlink()
    with pytest.raises(WeightsError, match=r"missing \['encoder.pkl'\]"):
        load_model(manylangs)


def test_an_interrupted_export_leaves_no_file(tmp_path, monkeypatch, allennlp_dir):
    bilm = load_bilm(allennlp_dir)
    target = tmp_path / "published"

    def failing(self, name, **kwargs):
        raise OSError(27, "File too large")

    monkeypatch.setattr(h5py.Group, "create_dataset", failing)
    with pytest.raises(OSError, match="File too large"):
        export_published(bilm, target)
    assert list(target.iterdir()) == []
    monkeypatch.undo()
    export_published(bilm, target)
    numpy.testing.assert_array_equal(load_bilm(target).embed([["a", "b"]])[0], bilm.embed([["a", "b"]])[0])


def test_a_lone_file_that_looks_published_is_not_a_second_model(tmp_path):
    target = tmp_path / "model"
    save_native(target, tiny_bilm(0))
    (target / "tokenizer_options.json").write_text("{}")
    load_model(target)  # an options file alone is no published model
    (target / "old_weights.hdf5").write_bytes(b"")
    with pytest.raises(WeightsError, match="2 model layouts"):  # a pair is
        load_model(target)
