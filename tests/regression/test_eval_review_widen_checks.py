"""Regression: scripts/widen_bilm.py and `widen_projection` took a bad OUTPUT or --scale to a traceback.

An OUTPUT inside a file (small.spacy/x) failed with NotADirectoryError only after the model had been
loaded and widened, one that cannot be written (under /proc) with FileNotFoundError; --scale -1 was
torch's "uniform_ expects from <= to" RuntimeError and --scale nan a traceback too. The script now
checks the output's folders and the scale before loading (one line, exit status 1) and turns an
OSError from saving into one line; `widen_projection` raises a ValueError for such a scale.
"""
import math
from pathlib import Path

import pytest

from spacy_elmo.bilm.widen import widen_projection
from spacy_elmo.io.native import save_native
from tests.bilm.word_tables import table_bilm
from tests.regression.test_train_script_exit_status_and_settings import _script, _status


@pytest.fixture
def tiny(tmp_path) -> Path:
    """A tiny native model to widen (projection_dim 8)."""
    save_native(tmp_path / "tiny", table_bilm(seed=3))
    return tmp_path / "tiny"


def _run(argv, capsys, monkeypatch=None, load=True) -> str:
    """widen_bilm.main(argv), which must exit with status 1 and a message, no traceback: the message
    with wasabi's wrapping undone. `load=False`: the model must not be loaded first."""
    script = _script("widen_bilm")
    if not load:
        def not_loaded(*args, **kwargs):
            raise AssertionError("the model was loaded before the check")

        monkeypatch.setattr(script, "load_native", not_loaded)
    with pytest.raises(SystemExit) as exited:
        script.main([str(a) for a in argv])
    assert _status(exited.value.code) == 1
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert "Traceback" not in text and "✘" in text, text
    return " ".join(text.split())


def test_an_output_inside_a_file_is_refused_before_loading(tiny, tmp_path, capsys, monkeypatch):
    (tmp_path / "small.spacy").write_bytes(b"a file")
    output = tmp_path / "small.spacy" / "x"
    text = _run([tiny, output, "--projection-dim", "12"], capsys, monkeypatch, load=False)
    assert f"{output}: {tmp_path / 'small.spacy'} is a file, not a directory" in text


def test_missing_folders_of_the_output_are_still_made(tiny, tmp_path):
    output = tmp_path / "new" / "deeper" / "wide"
    _script("widen_bilm").main([str(tiny), str(output), "--projection-dim", "12"])
    assert (output / "elmo.json").is_file()


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_an_output_that_cannot_be_written_is_one_line(tiny, capsys):
    output = Path("/proc/spacy-elmo-widened")
    text = _run([tiny, output, "--projection-dim", "12"], capsys)
    assert f"{output}: cannot write the widened model (" in text


@pytest.mark.parametrize("scale", ["-1", "nan", "inf"])
def test_a_scale_below_zero_or_not_finite_is_refused_before_loading(tiny, tmp_path, capsys, monkeypatch, scale):
    text = _run([tiny, tmp_path / "wide", "--projection-dim", "12", "--scale", scale], capsys, monkeypatch,
                load=False)
    assert f"--scale must be a finite number >= 0, got {float(scale)}" in text
    assert not (tmp_path / "wide").exists()


@pytest.mark.parametrize("scale", [-1.0, math.nan, math.inf])
def test_widen_projection_raises_a_value_error_for_such_a_scale(scale):
    with pytest.raises(ValueError, match="scale must be a finite number >= 0"):
        widen_projection(table_bilm(seed=3), 12, scale=scale)


def test_a_scale_of_zero_still_widens():
    assert widen_projection(table_bilm(seed=3), 12, scale=0.0).config.projection_dim == 12
