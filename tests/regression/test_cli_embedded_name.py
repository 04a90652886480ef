"""Regression: the name `embedded` (the package's own English biLM) worked for `pretrain --init-from`
only; `info embedded`, `embed --weights embedded` and `perplexity embedded` said "no such directory,
archive, URL or catalogue name". And `perplexity` on a model without its softmax told the user to
"use a model trained with `spacy_elmo pretrain`", though the embedded model was trained so: it ships
without its softmax, and perplexity needs a pretrain run's model-last or model-best."""
import json

import h5py

from spacy_elmo.cli import app
from spacy_elmo.resources import default_model_path
from tests.cli.invoke import refused, runner


def test_info_embedded_is_the_default_model():
    named = json.loads(runner.invoke(app, ["info", "embedded", "--json"]).output)
    default = json.loads(runner.invoke(app, ["info", "--json"]).output)
    assert named["path"] == default["path"] == "(embedded English model)"
    assert named["config"] == default["config"]


def test_embed_with_weights_embedded(tmp_path):
    text = tmp_path / "s.txt"
    text.write_text("the cat\n")
    named, default = tmp_path / "named.hdf5", tmp_path / "default.hdf5"
    for out, extra in ((named, ["--weights", "embedded"]), (default, [])):
        result = runner.invoke(app, ["embed", str(text), str(out), "-q", *extra])
        assert result.exit_code == 0, result.output
    with h5py.File(named, "r") as a, h5py.File(default, "r") as b:
        assert (a["0"][...] == b["0"][...]).all()


def test_perplexity_embedded_says_the_softmax_was_dropped(tmp_path):
    text = tmp_path / "t.txt"
    text.write_text("the cat sat\n")
    message = refused(["perplexity", "embedded", text, "--tokenizer", "whitespace"],
                      "carries no softmax", "drop it to save space", "model-last or model-best")
    assert "no such directory" not in message


def test_download_embedded_needs_no_download():
    result = runner.invoke(app, ["download", "embedded", "--quiet"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(default_model_path())
