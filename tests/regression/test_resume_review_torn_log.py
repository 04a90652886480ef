"""Regression: a torn last line in log.jsonl made --resume (and the report) fail with a traceback.

A run killed while appending an evaluation's row leaves a last line like `{"epoch":0,"step":4`
without its end: `scripts/train.py --resume` then exited 1 with a JSONDecodeError traceback
(`_truncate_log` parsed every line), and scripts/report.py's `_log` failed the same way. Such a
last line is now left out (the resumed run writes that evaluation's row again, so its log is the
uninterrupted run's); a bad line before the last is a one-line error naming the file and line.
Rows are appended in one unbuffered write of the whole line, before the checkpoint they belong to.
The kill is a torn line written by the test; the stop a signal raised by a registered callback.
"""
import json
import re

import pytest

import spacy_elmo.resumable_training as resumable
from spacy_elmo.resumable_training import LOG, read_log
from tests.regression.test_train_script_exit_status_and_settings import _script, _train, project  # noqa: F401

TORN = '{"epoch":0,"step":4,"losses":{"tok2vec":0.1'


def _rows(output):
    return [json.loads(line) for line in (output / LOG).read_text().splitlines()]


def test_a_torn_last_line_is_left_out_and_a_bad_line_before_it_named(tmp_path):
    path = tmp_path / LOG
    rows = [{"epoch": 0, "step": 0, "score": 0.5}, {"epoch": 0, "step": 2, "score": 0.7}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows) + TORN)
    assert read_log(path) == rows
    path.write_text(json.dumps(rows[0]) + "\n" + TORN + "\n" + json.dumps(rows[1]) + "\n")
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}, line 2: not a log row \("):
        read_log(path)
    assert read_log(tmp_path / "none.jsonl") == []


def test_a_row_is_appended_in_one_write_of_the_whole_line(tmp_path, monkeypatch):
    writes = []

    class Recorder:
        def __init__(self, path, mode, buffering=-1):
            assert mode == "ab" and buffering == 0, (mode, buffering)  # unbuffered: nothing left to flush

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def write(self, data):
            writes.append(data)
            return len(data)

    monkeypatch.setattr(resumable, "open", Recorder, raising=False)
    info = {"epoch": 1, "step": 4, "losses": {"tagger": 2.5}, "other_scores": {"tag_acc": 0.5}, "score": 0.5}
    resumable._append_log(tmp_path / LOG, info, {"tag_acc": 1.0})
    assert len(writes) == 1 and writes[0].endswith(b"\n") and writes[0].count(b"\n") == 1
    assert json.loads(writes[0]) == {"epoch": 1, "step": 4, "losses": {"tagger": 2.5}, "scores": {"tag_acc": 50.0},
                                     "score": 0.5}


def _stopped_run(monkeypatch, project, output) -> None:  # noqa: F811
    """scripts/train.py stopped by SIGTERM before step 2 (an evaluation step): model-last at step 3."""
    stop = json.dumps({"@callbacks": "test-train-script-raise-signal.v1", "step": 2, "name": "SIGTERM"})
    assert _train(monkeypatch, project, output, "--training.before_update", stop) == 143
    assert [row["step"] for row in _rows(output)] == [0, 2]


def test_train_resumes_over_a_torn_last_row(monkeypatch, capsys, project, tmp_path):  # noqa: F811
    assert _train(monkeypatch, project, tmp_path / "whole") == 0
    output = tmp_path / "out"
    _stopped_run(monkeypatch, project, output)
    with open(output / LOG, "a", encoding="utf-8") as log:  # killed while appending the next row
        log.write(TORN)
    assert _train(monkeypatch, project, output, "--resume") == 0
    assert _rows(output) == _rows(tmp_path / "whole")


def test_a_bad_line_before_the_last_is_one_line_naming_it(monkeypatch, capsys, project, tmp_path):  # noqa: F811
    output = tmp_path / "out"
    _stopped_run(monkeypatch, project, output)
    lines = (output / LOG).read_text().splitlines()
    damaged = "\n".join([lines[0], TORN, lines[1]]) + "\n"
    (output / LOG).write_text(damaged)
    capsys.readouterr()
    assert _train(monkeypatch, project, output, "--resume") == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"cannot resume: {output / LOG}, line 2: not a log row (") and len(err.splitlines()) == 1
    assert "--overwrite" in err and (output / LOG).read_text() == damaged


def test_report_reads_a_log_with_a_torn_last_line(tmp_path):
    report = _script("report")
    rows = [{"epoch": 0, "step": 0, "scores": {"tag_acc": 90.0}, "score": 0.9}]
    (tmp_path / LOG).write_text(json.dumps(rows[0]) + "\n" + TORN)
    assert report._log(tmp_path / LOG) == rows
    (tmp_path / LOG).write_text(TORN + "\n" + json.dumps(rows[0]) + "\n")
    with pytest.raises(SystemExit, match=rf"^{re.escape(str(tmp_path / LOG))}, line 1: not a log row"):
        report._log(tmp_path / LOG)
