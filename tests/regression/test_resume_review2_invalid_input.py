"""Regression: invalid input that spaCy's config loading lets through was a traceback in the scripts.

scripts/train.py with an OUTPUT_DIR that is an existing file (with or without --overwrite: mkdir's
FileExistsError), `--training.eval_frequency 0` (a ZeroDivisionError after run_settings.json had
been written), `--training.max_epochs -1` (train_resumable's ValueError), `--training.max_steps abc`
(confection's ConfigValidationError, dumping the resolved block) or an empty training corpus
(spaCy's AssertionError E923), and scripts/finetune.py with an OUTPUT_DIR that is a file (the same
mkdir traceback) or `--max-steps -1` (it stopped at step 0 and exited 0), each failed so. Each is
now one line, exit 1, checked before anything is written: the output is not made (or the file
left as it was).
"""
import pytest
from spacy.tokens import DocBin

from tests.regression.test_finetune_script_log_status_and_settings import _finetune, frozen  # noqa: F401
from tests.regression.test_train_script_exit_status_and_settings import _train, project  # noqa: F401

CASES = {
    "output is a file": ("file", [], "exists and is a file, not a directory"),
    "output is a file, --overwrite": ("file", ["--overwrite"], "exists and is a file, not a directory"),
    "output inside a file": ("file/out", [], "is a file, not a directory"),
    "eval_frequency 0": ("out", ["--training.eval_frequency", "0"], "training.eval_frequency must be an integer >= 1"),
    "max_epochs -1": ("out", ["--training.max_epochs", "-1"], "training.max_epochs must be an integer >= 0"),
    "max_steps abc": ("out", ["--training.max_steps", "abc"], "max_steps: Input should be a valid integer"),
    "empty training corpus": ("out", [], "[E923]"),
}


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("case", sorted(CASES))
def test_train_refuses_invalid_input_in_one_line_writing_nothing(monkeypatch, capsys, project, tmp_path,  # noqa
                                                                 case):
    where, extra, expected = CASES[case]
    config, train, dev = project
    (tmp_path / "file").write_text("a file")
    if case == "empty training corpus":
        DocBin().to_disk(tmp_path / "empty.spacy")
        project = (config, tmp_path / "empty.spacy", dev)
    capsys.readouterr()
    assert _train(monkeypatch, project, tmp_path / where, *extra) == 1
    err = _one_line(capsys)
    assert expected in err, err
    assert (tmp_path / "file").read_text() == "a file" and not (tmp_path / "out").exists()


def test_finetune_refuses_an_output_that_is_a_file(monkeypatch, capsys, frozen):  # noqa: F811
    (frozen / "file").write_text("a file")
    capsys.readouterr()
    assert _finetune(monkeypatch, frozen / "frozen", frozen / "file", frozen) == 1
    expected = f"{frozen / 'file'}: exists and is a file, not a directory; choose another output directory"
    assert _one_line(capsys) == expected
    assert (frozen / "file").read_text() == "a file"


def test_finetune_refuses_a_negative_step_cap(monkeypatch, capsys, frozen):  # noqa: F811
    capsys.readouterr()
    assert _finetune(monkeypatch, frozen / "frozen", frozen / "tuned", frozen, "--max-steps", "-1") == 1
    assert "training.max_steps must be an integer >= 0" in _one_line(capsys)
    assert not (frozen / "tuned").exists()
