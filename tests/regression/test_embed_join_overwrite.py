"""Regression: `embed --join N` ignored `--overwrite` and destroyed an interrupted run.

An existing OUTPUT and an interrupted run's OUTPUT.partial were replaced by
the joined file without a word. `--join` now applies `embed`'s checks:
either is refused unless `--overwrite` is given.
"""
import hashlib

import h5py
import numpy

from spacy_elmo.cli import app
from spacy_elmo.embedding.dump import embed_file, partial_path

from ..cli.invoke import refused, runner


def test_join_refuses_an_existing_output_or_partial_without_overwrite(allennlp_bilm, tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("The cat sat .\n\na dog ran off\n", encoding="utf-8")
    out = tmp_path / "out.hdf5"
    for k in range(2):
        embed_file(allennlp_bilm, text, out, shard=(k, 2))
    with h5py.File(partial_path(out), "w") as f:  # an interrupted single run on the same OUTPUT
        f.attrs["status"] = "incomplete"
        f.create_dataset("0", data=numpy.full((3, 4, 32), 7.0, dtype="float32"))
    digest = hashlib.sha256(partial_path(out).read_bytes()).hexdigest()
    refused(["embed", text, out, "--join", "2"], "out.hdf5.partial holds an interrupted run", "--overwrite")
    assert hashlib.sha256(partial_path(out).read_bytes()).hexdigest() == digest and not out.exists()
    assert runner.invoke(app, ["embed", str(text), str(out), "--join", "2", "--overwrite"]).exit_code == 0
    assert out.exists() and not partial_path(out).exists()
    before = out.read_bytes()
    refused(["embed", text, out, "--join", "2"], "out.hdf5 exists; pass --overwrite")
    assert out.read_bytes() == before
    result = runner.invoke(app, ["embed", str(text), str(out), "--join", "2", "--overwrite"])
    assert result.exit_code == 0, result.output
    with h5py.File(out, "r") as f:
        assert f.attrs["shards"] == 2 and sorted(k for k in f.keys() if k.isdigit()) == ["0", "1", "2"]
