"""Published format: round trips and clear errors for broken or mismatched files."""
import json
import shutil

import h5py
import numpy
import pytest

from spacy_elmo.io import WeightsError, export_published, load_bilm, load_model
from spacy_elmo.io.published import expected_datasets, read_options
from tests.bilm.word_tables import table_bilm


def _copy(src, dst):
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copy(src / "options.json", dst / "options.json")
    shutil.copy(src / "lm_weights.hdf5", dst / "weights.hdf5")
    return dst


def test_export_round_trip_is_exact(allennlp_dir, tmp_path):
    model = load_bilm(allennlp_dir)
    export_published(model, tmp_path / "out")
    with h5py.File(allennlp_dir / "lm_weights.hdf5", "r") as a, h5py.File(tmp_path / "out" / "weights.hdf5", "r") as b:
        names = [n for n, _ in expected_datasets(model.config)]
        for name in names:
            numpy.testing.assert_array_equal(a[name][...], b[name][...])
    options = json.loads((tmp_path / "out" / "options.json").read_text())
    assert read_options(tmp_path / "out" / "options.json") == model.config
    assert options["char_cnn"]["n_characters"] == 262


def test_loads_both_fixture_layouts(allennlp_dir, bilm_tf_dir):
    assert load_bilm(allennlp_dir).config.use_skip_connections
    assert not load_bilm(bilm_tf_dir / "model").config.use_skip_connections


def test_n_characters_261_is_accepted(allennlp_dir, tmp_path):
    d = _copy(allennlp_dir, tmp_path / "m")
    options = json.loads((d / "options.json").read_text())
    options["char_cnn"]["n_characters"] = 261
    (d / "options.json").write_text(json.dumps(options))
    ref = load_bilm(allennlp_dir).embed([["a", "b"]])[0]
    numpy.testing.assert_array_equal(load_bilm(d).embed([["a", "b"]])[0], ref)


def test_without_highway_and_projection(tmp_path):
    from spacy_elmo.bilm import BiLM, BiLMConfig

    config = BiLMConfig(lstm_dim=8, projection_dim=6, n_layers=1, filters=((1, 2), (2, 4)), n_highway=0,
                        char_embedding_dim=3)
    model = BiLM(config)
    model.reset_parameters(3)
    assert not model.token_encoder.has_projection
    export_published(model, tmp_path)
    numpy.testing.assert_array_equal(load_bilm(tmp_path).embed([["xyz"]])[0], model.embed([["xyz"]])[0])


@pytest.mark.parametrize(
    "breakage,message",
    [
        ("not_hdf5", "not a readable HDF5"),
        ("truncated", "not a readable HDF5"),
        ("missing_dataset", "missing dataset 'CNN_high_1/W_carry'"),
        ("wrong_shape", "dataset 'CNN_proj/W_proj' has shape"),
        ("extra_layer", "does not fit"),
        ("nan", "NaN"),
        ("bad_json", "not valid JSON"),
        ("unknown_key", "unknown key"),
        ("missing_key", "missing required key"),
        ("no_weights", "no weight file"),
    ],
)
def test_broken_files_give_one_clear_error(allennlp_dir, tmp_path, breakage, message):
    d = _copy(allennlp_dir, tmp_path / "m")
    weights = d / "weights.hdf5"
    options = d / "options.json"
    if breakage == "not_hdf5":
        weights.write_text("this is not hdf5")
    elif breakage == "truncated":
        data = weights.read_bytes()
        weights.write_bytes(data[: len(data) // 2])
    elif breakage in ("missing_dataset", "wrong_shape", "extra_layer", "nan"):
        with h5py.File(weights, "a") as f:
            if breakage == "missing_dataset":
                del f["CNN_high_1/W_carry"]
            elif breakage == "wrong_shape":
                del f["CNN_proj/W_proj"]
                f["CNN_proj/W_proj"] = numpy.zeros((124, 17), dtype="float32")
            elif breakage == "extra_layer":
                f["CNN_high_5/W_carry"] = numpy.zeros((124, 124), dtype="float32")
            else:
                data = f["char_embed"][...]
                data[3, 1] = numpy.nan
                f["char_embed"][...] = data
    elif breakage == "bad_json":
        options.write_text("{ not json")
    elif breakage in ("unknown_key", "missing_key"):
        opts = json.loads(options.read_text())
        if breakage == "unknown_key":
            opts["lstm"]["n_layer"] = 2
        else:
            del opts["lstm"]["projection_dim"]
        options.write_text(json.dumps(opts))
    elif breakage == "no_weights":
        weights.unlink()
    with pytest.raises(WeightsError, match=message) as info:
        load_model(d)
    assert str(d) in str(info.value) or "options" in str(info.value)


def test_missing_directory(tmp_path):
    with pytest.raises(WeightsError, match="no such directory"):
        load_bilm(tmp_path / "nope")


def test_published_export_refuses_a_table_and_writes_nothing(tmp_path):
    with pytest.raises(WeightsError, match="no place for a word table"):
        export_published(table_bilm(), tmp_path / "out")
    assert not (tmp_path / "out").exists()
