"""Regression: scripts/static_vectors.py and scripts/retokenize.py wrote into a non-empty folder.

Both wrote their pipeline over whatever OUTPUT held, so a component or file of an earlier pipeline
stayed beside the new one (spaCy loads what config.cfg names, but the folder was no longer what the
command made, and `path_identity` of it, which scripts/train.py records for --paths.vectors, counted
the stale files). An OUTPUT that exists and is not empty is now refused in one line, unless
--overwrite, which replaces it whole; an OUTPUT that holds the input is refused even then. The
project's `static-vectors` steps, which rebuild, pass --overwrite.
"""
import pytest
import spacy
import srsly
from spacy.tokens import Doc, DocBin

from tests.regression.test_train_script_exit_status_and_settings import SCRIPTS, _script, _status


def _flat(text: str) -> str:
    """wasabi's message as one line (it wraps at the terminal's width)."""
    return " ".join(text.split())


def _exit(call) -> int:
    try:
        call()
    except SystemExit as exited:
        return _status(exited.code)
    return 0


def test_static_vectors_refuses_a_non_empty_output_unless_overwrite(capsys, tmp_path):
    static_vectors = _script("static_vectors")
    output = tmp_path / "static_vectors"
    (output / "old_component").mkdir(parents=True)
    (output / "old_component" / "model").write_text("stale")
    assert _exit(lambda: static_vectors.main([str(output)])) == 1
    out = _flat(capsys.readouterr().out)
    assert f"{output}: exists and is a folder that is not empty; pass --overwrite" in out
    assert (output / "old_component" / "model").is_file() and not (output / "word_table.json").exists()

    assert _exit(lambda: static_vectors.main([str(output), "--overwrite"])) == 0
    assert not (output / "old_component").exists() and (output / "word_table.json").is_file()
    assert spacy.load(output).vocab.vectors.shape[0] == srsly.read_json(output / "word_table.json")["rows"]

    (tmp_path / "model").mkdir()  # an output holding the biLM is refused, --overwrite or not
    argv = [str(tmp_path), "--weights", str(tmp_path / "model"), "--overwrite"]
    assert _exit(lambda: static_vectors.main(argv)) == 1
    assert f"{tmp_path}: holds the biLM" in _flat(capsys.readouterr().out) and output.is_dir()


def test_the_project_rebuilds_the_static_vectors_with_overwrite():
    project = srsly.read_yaml(SCRIPTS.parent / "project.yml")
    lines = [line for command in project["commands"] for line in command.get("script", [])
             if "scripts/static_vectors.py" in line]
    assert len(lines) == 2 and all(line.endswith(" --overwrite") for line in lines)


@pytest.fixture
def trained(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.to_disk(tmp_path / "model")
    DocBin(docs=[Doc(nlp.vocab, words=["an", "e-mail", "."])]).to_disk(tmp_path / "train.spacy")
    return tmp_path


def test_retokenize_refuses_a_non_empty_output_unless_overwrite(capsys, trained):
    retokenize = _script("retokenize")
    output = trained / "out"
    output.mkdir()
    (output / "stale.txt").write_text("an earlier pipeline's file")
    argv = [str(trained / "model"), str(output), "--train", str(trained / "train.spacy")]
    assert _exit(lambda: retokenize.main(argv)) == 1
    assert f"{output}: exists and is a folder that is not empty" in _flat(capsys.readouterr().out)
    assert (output / "stale.txt").is_file() and not (output / "config.cfg").exists()
    assert _exit(lambda: retokenize.main(argv + ["--overwrite"])) == 0
    assert not (output / "stale.txt").exists() and spacy.load(output).pipe_names == ["sentencizer"]
    # a folder holding the pipeline would be deleted with it: refused
    argv = [str(trained / "model"), str(trained), "--train", str(trained / "train.spacy"), "--overwrite"]
    assert _exit(lambda: retokenize.main(argv)) == 1
    assert (trained / "model" / "config.cfg").is_file()
