"""Regression: scripts/report.py miscounted steps, lost the fine-tuned column, and failed on damaged JSON.

- The run table's "steps" was the last evaluation's step, not the steps trained: a run capped at
  max_steps 30 trains 31 (spaCy numbers steps from 0 and stops after step 30), and a run stopped
  between evaluations trained more than its last row says. It is now wall_time.json's "steps", the
  training state's count.
- Without the vectors baseline's metrics, the fine-tuned pipeline's column was dropped, though the
  docstring says it gets a column of its own: it now has one, with its difference to the baseline.
- A metrics file cut short ended the report with a JSONDecodeError traceback: now one line naming
  the file and the step that writes it.
"""
import json

import pytest

from tests.regression.test_train_script_exit_status_and_settings import _script


def _metrics(folder, name, **scores):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps({"scores": scores}))


def _run(training, name, steps, last_step, stopped="max steps"):
    run = training / name
    run.mkdir(parents=True)
    rows = [{"epoch": 0, "step": step, "scores": {"pos_acc": 50.0 + step}, "score": 0.5}
            for step in range(0, last_step + 1, 10)]
    (run / "log.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    wall = {"seconds": 60.0, "stopped": stopped, "best_step": last_step, "command": []}
    if steps is not None:
        wall["steps"] = steps
    (run / "wall_time.json").write_text(json.dumps(wall))


@pytest.fixture
def report():
    return _script("report")


def test_the_fine_tuned_column_without_the_vectors_baseline(report, tmp_path):
    metrics = tmp_path / "metrics"
    _metrics(metrics, "ewt_baseline", pos_acc=0.90, dep_las=0.80)
    _metrics(metrics, "ewt_elmo", pos_acc=0.92, dep_las=0.83)
    _metrics(metrics, "ewt_elmo_finetuned", pos_acc=0.93, dep_las=0.84)
    _metrics(metrics, "ner_baseline", ents_f=0.70)
    _metrics(metrics, "ner_elmo", ents_f=0.75)
    lines = report.table(metrics, tmp_path / "training", "").splitlines()
    assert lines[0] == "| metric (test) | baseline | ELMo | difference | ELMo fine-tuned | fine-tuned - baseline |"
    assert lines[1] == "|---|---|---|---|---|---|"
    assert "| UPOS | 90.00 | 92.00 | +2.00 | 93.00 | +3.00 |" in lines
    assert "| NER F1 | 70.00 | 75.00 | +5.00 |  |  |" in lines
    # with the vectors baseline: its column, and the fine-tuned pipeline's difference to it
    _metrics(metrics, "ewt_baseline_vectors", pos_acc=0.91, dep_las=0.81)
    lines = report.table(metrics, tmp_path / "training", "").splitlines()
    assert lines[0] == ("| metric (test) | baseline | baseline + static vectors | ELMo | ELMo - baseline "
                        "| ELMo - baseline + vectors | ELMo fine-tuned | fine-tuned - baseline + vectors |")
    assert "| UPOS | 90.00 | 91.00 | 92.00 | +2.00 | +1.00 | 93.00 | +2.00 |" in lines


def test_steps_are_the_steps_trained(report, tmp_path):
    metrics, training = tmp_path / "metrics", tmp_path / "training"
    _metrics(metrics, "ewt_baseline", pos_acc=0.90)
    _metrics(metrics, "ewt_elmo", pos_acc=0.92)
    _run(training, "ewt_baseline", steps=31, last_step=30)  # max_steps 30: steps 0..30
    _run(training, "ewt_elmo", steps=47, last_step=40, stopped="time budget")  # stopped after step 46
    _run(training, "ner_baseline", steps=None, last_step=20)  # a wall_time.json without the count
    text = report.table(metrics, training, "")
    assert "| ewt_baseline | 31 | " in text and "| ewt_elmo | 47 | " in text
    assert "| ner_baseline | 21 | " in text


def test_a_damaged_metrics_file_is_one_line(report, tmp_path):
    metrics = tmp_path / "metrics"
    _metrics(metrics, "ewt_baseline", pos_acc=0.90)
    _metrics(metrics, "ewt_elmo", pos_acc=0.92)
    (metrics / "ewt_elmo.json").write_text('{"scores": {"pos_acc": 0.9')  # cut short
    with pytest.raises(SystemExit) as exited:
        report.table(metrics, tmp_path / "training", "")
    message = str(exited.value.code)
    assert message.startswith(f"{metrics / 'ewt_elmo.json'}: not a readable JSON file (")
    assert "`evaluate`" in message and len(message.splitlines()) == 1


def test_the_best_step_is_the_runs_own_record(report, tmp_path):
    """Regression (project review): where evaluations tie (NER at F1 0.0 throughout a smoke run), the
    best step came from the last log row matching model-best's scores (30), not the run's best (0)."""
    metrics, training = tmp_path / "metrics", tmp_path / "training"
    _metrics(metrics, "ner_baseline", ents_f=0.0)
    _metrics(metrics, "ner_elmo", ents_f=0.0)
    _run(training, "ner_baseline", steps=31, last_step=30)
    wall = json.loads((training / "ner_baseline" / "wall_time.json").read_text())
    (training / "ner_baseline" / "wall_time.json").write_text(json.dumps(dict(wall, best_step=0)))
    rows = [{"epoch": 0, "step": step, "scores": {"ents_f": 0.0}, "score": 0.0} for step in (0, 10, 20, 30)]
    (training / "ner_baseline" / "log.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (training / "ner_baseline" / "model-best").mkdir()
    (training / "ner_baseline" / "model-best" / "meta.json").write_text(json.dumps({"performance": {"ents_f": 0.0}}))
    assert "| ner_baseline | 31 | 0 | " in report.table(metrics, training, "")


def test_the_table_is_written_without_matplotlib(report, tmp_path, monkeypatch, capsys):
    """Regression (project review): without matplotlib (an optional extra) `report` drew the plots first and
    ended in ModuleNotFoundError, writing no comparison.md."""
    metrics = tmp_path / "metrics"
    _metrics(metrics, "ewt_baseline", pos_acc=0.90, dep_las=0.80)
    _metrics(metrics, "ewt_elmo", pos_acc=0.92, dep_las=0.83)
    _metrics(metrics, "ner_baseline", ents_f=0.70)
    _metrics(metrics, "ner_elmo", ents_f=0.75)
    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)  # import matplotlib: ImportError
    monkeypatch.setattr("sys.argv", ["report.py", "--metrics", str(metrics), "--training", str(tmp_path / "t"),
                                     "--plots", str(tmp_path / "plots")])
    report.main()
    assert "| UPOS | 90.00 | 92.00 | +2.00 |" in (metrics / "comparison.md").read_text()
    assert "the plots are left out" in capsys.readouterr().err
