"""Regression: a model converted to the native format claimed to be in the format it came from.

`convert` passed the loaded model's metadata through, and for a published
or ELMoForManyLangs input that is the loader's description of it
({"source": ..., "format": "published"}), so the native copy's elmo.json,
and `info` on it, said format "published". The copy now records
{"format": "native", "converted_from": {...}}; a native model's own
metadata (what `pretrain` recorded) still goes over unchanged.
"""
import json

from spacy_elmo.cli import app
from spacy_elmo.io import read_meta

from ..cli.invoke import runner
from ..io.manylangs_model import write_manylangs_model
from ..io.model_server import published_dir, tiny_bilm


def test_a_published_model_converted_to_native(tmp_path):
    source = published_dir(tmp_path / "pub", tiny_bilm(9))
    result = runner.invoke(app, ["convert", str(source), str(tmp_path / "native")])
    assert result.exit_code == 0, result.output
    metadata = read_meta(tmp_path / "native")["metadata"]
    assert metadata == {"format": "native", "converted_from": {"source": str(source), "format": "published"}}
    info = json.loads(runner.invoke(app, ["info", str(tmp_path / "native"), "--json"]).output)
    assert info["metadata"]["format"] == "native"
    assert info["metadata"]["converted_from"]["format"] == "published"


def test_an_elmoformanylangs_model_converted_to_native(tmp_path):
    source = write_manylangs_model(tmp_path / "zh.model")
    result = runner.invoke(app, ["convert", str(source), str(tmp_path / "native")])
    assert result.exit_code == 0, result.output
    metadata = read_meta(tmp_path / "native")["metadata"]
    assert metadata["format"] == "native" and metadata["converted_from"]["format"] == "elmoformanylangs"
    # converted again (native -> native, e.g. to float16): the record is kept as it is
    result = runner.invoke(app, ["convert", str(tmp_path / "native"), str(tmp_path / "half"), "--float16"])
    assert result.exit_code == 0, result.output
    assert read_meta(tmp_path / "half")["metadata"] == metadata
