"""Regression: `embed j.jsonl out.hdf5 --lang zz` (and `--precision float8`) failed only once the run
had started, leaving out.hdf5.partial behind; the rerun with the option corrected was then refused
("holds an interrupted run; pass --resume or --overwrite"). docs/cli.md promises bad input is reported
before any work: option values are now checked before the model loads or a file is created."""
import h5py
import pytest

from spacy_elmo.cli import app
from tests.cli.invoke import refused, runner


@pytest.mark.parametrize("bad,expected", [
    (["--lang", "zz"], "--lang zz: no such spaCy language"),
    (["--lang", "en", "--precision", "float8"], "--precision must be one of"),
    (["--pipeline", "no_such_pipeline_zz"], "--pipeline no_such_pipeline_zz: cannot load it"),
])
def test_bad_option_writes_nothing_and_the_corrected_rerun_works(allennlp_dir, tmp_path, bad, expected):
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text('{"text": "the cat sat"}\n{"tokens": ["a", "dog"]}\n')
    out = tmp_path / "out.hdf5"
    refused(["embed", jsonl, out, "--weights", allennlp_dir, "-q", *bad], expected)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]
    result = runner.invoke(app, ["embed", str(jsonl), str(out), "--weights", str(allennlp_dir), "-q",
                                 "--lang", "en"])
    assert result.exit_code == 0, result.output
    with h5py.File(out, "r") as f:
        assert f.attrs["status"] == "complete" and f["0"].shape[1] == 3
