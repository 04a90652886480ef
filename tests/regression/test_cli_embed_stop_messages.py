"""Regression: `embed` stopped by Ctrl-C printed nothing (exit 130), and by a full disk a whole Rich
traceback.

Both keep OUTPUT.partial for `--resume`, which neither said. Each now ends
with one line naming what is kept and how to continue it; the exit codes are
130 (interrupt) and 1. Faults are injected at a chunk (spacy_elmo/faults.py).
"""
import h5py
import pytest

from spacy_elmo.cli import app
from spacy_elmo.embedding.dump import partial_path

from ..cli.invoke import flat, runner


@pytest.fixture
def command(allennlp_dir, tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("The cat sat .\na dog ran off\n\nbirds fly south\nend .\n", encoding="utf-8")
    out = tmp_path / "out.hdf5"
    return out, ["embed", str(text), str(out), "--weights", str(allennlp_dir), "-q", "--chunk-lines", "2"]


@pytest.mark.parametrize("action,code,first", [
    ("int", 130, "Interrupted: "),
    ("enospc", 1, "No space left on device (injected at embed.chunk): "),
])
def test_a_stopped_run_says_in_one_line_what_is_kept(command, inject, action, code, first):
    out, args = command
    inject(f"embed.chunk:1:{action}")
    result = runner.invoke(app, args)
    text = flat(result)
    assert result.exit_code == code, text
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) <= 3  # one wrapped line
    assert f"{first}{partial_path(out)} is kept; rerun with --resume to continue it" in text
    inject("")
    resumed = runner.invoke(app, [*args, "--resume"])
    assert resumed.exit_code == 0, flat(resumed)
    with h5py.File(out, "r") as f:
        assert f.attrs["status"] == "complete" and len([k for k in f.keys() if k.isdigit()]) == 5


def test_parquet_says_its_finished_parts_are_kept(command, inject, tmp_path):
    pytest.importorskip("pyarrow")
    _, args = command
    directory = tmp_path / "pq"
    args = [directory if a.endswith("out.hdf5") else a for a in args] + ["--format", "parquet"]
    inject("embed.chunk:1:int")
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 130
    assert f"Interrupted: the finished parts in {directory} are kept; rerun with --resume" in flat(result)
