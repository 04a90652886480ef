"""Regression: `evaluate --batch-size 0` reported 0.00 scores with exit 0, `-b -5` could end in a
traceback, `-g 0` on a machine without CuPy was thinc's ValueError traceback, a DATA_PATH that is not
a .spacy file was spaCy's [E1014] traceback, and `-o nodir/x.json` failed with FileNotFoundError only
after the whole evaluation ran. The numbers, the output path and the GPU are now checked before the
pipeline is loaded and the data is read through one message; each is one line and exit status 1."""
import importlib.util
import json

import pytest

from spacy_elmo.cli import app

from ..cli.invoke import refused, runner

CONLLU = (
    "1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\n"
    "2\tcat\tcat\tNOUN\tNN\t_\t3\tnsubj\t_\t_\n"
    "3\tsat\tsit\tVERB\tVBD\t_\t0\troot\t_\t_\n"
    "\n"
)


@pytest.fixture
def gold(tmp_path):
    """A small gold .spacy file (made by `corpus ud`)."""
    (tmp_path / "g.conllu").write_text(CONLLU * 4)
    result = runner.invoke(app, ["corpus", "ud", str(tmp_path / "g.conllu"), str(tmp_path / "g.spacy"), "-n", "2"])
    assert result.exit_code == 0, result.output
    return tmp_path / "g.spacy"


@pytest.fixture
def pipeline(tmp_path):
    """A pipeline that loads and evaluates in no time."""
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.to_disk(tmp_path / "pipeline")
    return tmp_path / "pipeline"


@pytest.mark.parametrize("value", ["0", "-5"])
def test_a_batch_size_below_one_is_refused(gold, tmp_path, value):
    refused(["evaluate", tmp_path / "no-such-pipeline", gold, "--batch-size", value, "-o", tmp_path / "s.json"],
            f"--batch-size must be 1 or more, got {value}")
    assert not (tmp_path / "s.json").exists()


def test_an_output_without_its_folder_is_refused_before_the_pipeline_loads(gold, tmp_path):
    # the model does not exist either: the output is checked first, so nothing is loaded or evaluated
    refused(["evaluate", tmp_path / "no-such-pipeline", gold, "-o", tmp_path / "nodir" / "x.json"],
            "nodir", "no such directory", "create it first")
    (tmp_path / "adir").mkdir()
    refused(["evaluate", tmp_path / "no-such-pipeline", gold, "-o", tmp_path / "adir"], "is a directory")
    assert not (tmp_path / "nodir").exists()


def test_a_gpu_spacy_cannot_use_is_one_message(gold, pipeline, monkeypatch):
    if importlib.util.find_spec("cupy") is not None:  # a GPU machine: the error thinc gives without CuPy
        import thinc.api

        def require_gpu(gpu_id=0):
            raise ValueError("Cannot use GPU, CuPy is not installed")

        monkeypatch.setattr(thinc.api, "require_gpu", require_gpu)
    refused(["evaluate", pipeline, gold, "--gpu-id", "0"], "--gpu-id 0: spaCy cannot use the GPU", "CuPy")


def test_a_file_that_is_not_a_docbin_is_one_message(pipeline, tmp_path):
    bad = tmp_path / "bad.spacy"
    bad.write_bytes(bytes(range(256)) * 4)
    refused(["evaluate", pipeline, bad], "bad.spacy: cannot read it as a .spacy file", "E1014")


def test_a_good_run_still_writes_its_scores(gold, pipeline, tmp_path):
    result = runner.invoke(app, ["evaluate", str(pipeline), str(gold), "-b", "1", "-o", str(tmp_path / "s.json")])
    assert result.exit_code == 0, result.output
    written = json.loads((tmp_path / "s.json").read_text())
    assert written["data"] == str(gold) and "speed" in written["scores"]
