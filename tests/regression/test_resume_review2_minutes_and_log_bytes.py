"""Regression: --max-minutes took -1 and nan, and a stray byte in a log failed its readers.

`add_resume_options` parsed --max-minutes as any float: -1 trained one step and exited 3 (the
budget spent), nan set no limit at all. It now takes a finite number >= 0 (argparse's one-line
usage error, exit 2 otherwise), and `train_resumable` refuses the same (TrainingSettingsError).
A byte that is not UTF-8 in a log.jsonl failed the whole file with a UnicodeDecodeError naming
neither the file nor the line: in `spacy_elmo.pretrain.plot` (the perplexity plot, and a resumed
pretraining that reads its log) and in `resumable_training`'s reader (--resume, the report). Each
line is now decoded on its own: the plot's reader skips such a line like a torn one, and the
training log's reader leaves it out as the last line (torn by a kill) and names the file and line
where it comes before.
"""
import argparse
import re

import pytest

from spacy_elmo.pretrain.plot import read_log as read_pretraining_log
from spacy_elmo.resumable_training import add_resume_options, read_log


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="train.py")
    add_resume_options(parser)
    return parser


@pytest.mark.parametrize("minutes", ["-1", "nan", "inf", "-inf", "abc"])
def test_max_minutes_must_be_a_finite_number_not_below_zero(capsys, minutes):
    with pytest.raises(SystemExit) as exited:
        _parser().parse_args([f"--max-minutes={minutes}"])
    assert exited.value.code == 2
    assert f"argument --max-minutes: expected a finite number of minutes >= 0 (0: no limit), not '{minutes}'" in (
        capsys.readouterr().err)


@pytest.mark.parametrize("minutes", [-1.0, float("nan"), float("inf")])
def test_train_resumable_refuses_such_a_budget_too(minutes):
    from spacy_elmo.resumable_training import TrainingSettingsError, check_training

    with pytest.raises(TrainingSettingsError, match="--max-minutes must be a finite number >= 0"):
        check_training({}, minutes)


def test_max_minutes_takes_zero_and_fractions():
    assert _parser().parse_args(["--max-minutes", "0"]).max_minutes == 0.0
    assert _parser().parse_args(["--max-minutes", "1.5"]).max_minutes == 1.5
    assert _parser().parse_args([]).max_minutes == 0.0


def test_a_stray_byte_is_skipped_by_the_plot_and_named_by_the_training_log(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"step": 0, "train_ppl": 9.0}\n\xff\xfe\n{"step": 2, "train_ppl": 8.0}\n\xff\n')
    assert read_pretraining_log(path) == [{"step": 0, "train_ppl": 9.0}, {"step": 2, "train_ppl": 8.0}]
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}, line 2: not a log row \('utf-8' codec"):
        read_log(path)
    path.write_bytes(b'{"step": 0}\n{"step": 2}\n\xff\xfe{"step"\n')  # a last line torn with a stray byte
    assert read_log(path) == [{"step": 0}, {"step": 2}]
