"""Regression: the benchmark scripts met bad arguments with tracebacks, or after their work, or not at all.

`--e2e-runs 0` died in statistics.median, `--threads -1` in torch, an unknown
pretraining section in a KeyError, a missing model or config in the package's
own exception, `bench_strided --tokens 100` in numpy (an empty "near the cut"
window), `bench_bilm --sections nope` exited 0 with dashes, `--sections
agreement` without the teacher failed after the probes had run, and
`bench_load` timed made-up text when the data was missing. Each is now one
line (argparse's usage error, exit 2, or SystemExit with the message) before
any work: here every entry point that would start work is replaced by one
that fails the test (`WorkStarted`), so nothing real runs.
"""
import sys
from pathlib import Path
from typing import Callable, List

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_bilm  # noqa: E402
import bench_distill  # noqa: E402
import bench_embed  # noqa: E402
import bench_finetune_memory  # noqa: E402
import bench_int8  # noqa: E402
import bench_load  # noqa: E402
import bench_pipeline  # noqa: E402
import bench_pretrain  # noqa: E402
import bench_strided  # noqa: E402
import bench_tokenizer  # noqa: E402
import check_huge_pages  # noqa: E402
import soak  # noqa: E402


class WorkStarted(AssertionError):
    """A benchmark started its work before refusing its arguments."""


def _no_work(*_args, **_kwargs):
    raise WorkStarted("the benchmark started its work before refusing the arguments")


def one_line_exit(main: Callable, argv: List[str], monkeypatch, capsys) -> str:
    """Run `main` with `argv`; the one-line message it exits with (argparse's error line for exit 2)."""
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as caught:
        main()
    code = caught.value.code
    if code == 2:  # argparse's usage error: usage lines, then one "error:" line
        message = capsys.readouterr().err.strip().splitlines()[-1]
        assert ": error: " in message
    else:
        assert isinstance(code, str), f"exit {code!r} without a message"
        message = code
    assert "\n" not in message and "Traceback" not in message
    return message


@pytest.mark.parametrize("argv, named", [
    (["--sections", "small", "--e2e-runs", "0"], "--e2e-runs"),
    (["--sections", "small", "--reference-sentences", "0"], "--reference-sentences"),
    (["--sections", "gpu", "--threads", "-1"], "--threads"),
    (["--sections", "small", "--sentences", "-1"], "--sentences"),
])
def test_bench_embed_counts(argv, named, monkeypatch, capsys):
    monkeypatch.setattr(bench_embed, "prefer_huge_pages", _no_work)
    assert named in one_line_exit(bench_embed.main, ["bench_embed.py", *argv], monkeypatch, capsys)


def test_bench_embed_threads_from_the_environment(monkeypatch, capsys):
    monkeypatch.setenv("BENCH_THREADS", "-1")
    monkeypatch.setattr(bench_embed, "prefer_huge_pages", _no_work)
    assert "--threads" in one_line_exit(bench_embed.main, ["bench_embed.py", "--sections", "gpu"], monkeypatch, capsys)


def test_bench_pretrain_unknown_section_and_missing_config(monkeypatch, capsys):
    monkeypatch.setattr(bench_pretrain, "section_batch", _no_work)
    assert "nope" in one_line_exit(bench_pretrain.main, ["bench_pretrain.py", "--sections", "nope"],
                                   monkeypatch, capsys)
    message = one_line_exit(bench_pretrain.main, ["bench_pretrain.py", "--sections", "batch", "--config",
                                                  "/nonexistent.cfg"], monkeypatch, capsys)
    assert "/nonexistent.cfg" in message


def test_bench_pretrain_refuses_too_few_segments(monkeypatch):
    """Too few segments for --steps gave rows of 0 tokens/s and then a ZeroDivisionError."""
    monkeypatch.setattr(bench_pretrain, "_batch_count", lambda *args: 1)
    args = bench_pretrain.argparse.Namespace(config=str(bench_pretrain.ROOT / "configs" / "pretrain_en_2x512_128.cfg"),
                                             segments=100, steps=2, cache="unused", batch_tokens=0)
    with pytest.raises(SystemExit) as caught:
        bench_pretrain.check_segments(args, ["speed"])
    assert "raise --segments" in str(caught.value.code) and "\n" not in str(caught.value.code)


@pytest.mark.parametrize("argv, named", [
    (["--docs", "0"], "--docs"),
    (["--rounds", "0"], "--rounds"),
    (["--weights", "/nonexistent"], "/nonexistent"),
])
def test_bench_pipeline(argv, named, monkeypatch, capsys):
    monkeypatch.setattr(bench_pipeline, "ud_docs", _no_work)
    monkeypatch.setattr(bench_pipeline, "build", _no_work)
    assert named in one_line_exit(bench_pipeline.main, ["bench_pipeline.py", *argv], monkeypatch, capsys)


@pytest.mark.parametrize("argv, named", [
    (["--tokens", "100"], "--tokens"),  # the window near the cut was empty: numpy's ValueError
    (["--tokens", "0"], "--tokens"),
    (["--stride", "0"], "--stride"),
    (["--stride", "300"], "--stride"),
    (["--weights", "/nonexistent"], "/nonexistent"),
])
def test_bench_strided(argv, named, monkeypatch, capsys):
    monkeypatch.setattr(bench_strided, "layers", _no_work)
    monkeypatch.setattr(bench_strided, "ewt_sentences", _no_work)
    assert named in one_line_exit(bench_strided.main, ["bench_strided.py", *argv], monkeypatch, capsys)


@pytest.mark.parametrize("argv, named", [(["--limit", "-1"], "--limit"), (["--rounds", "0"], "--rounds")])
def test_bench_tokenizer(argv, named, monkeypatch, capsys):
    monkeypatch.setattr(bench_tokenizer, "ud_docs", _no_work)
    assert named in one_line_exit(bench_tokenizer.main, ["bench_tokenizer.py", *argv], monkeypatch, capsys)


def test_bench_load_counts_and_missing_data(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(bench_load, "run_option", _no_work)
    assert "--repeats" in one_line_exit(bench_load.main, ["bench_load.py", "--repeats", "0"], monkeypatch, capsys)
    # the child timed made-up sentences when the data was missing
    monkeypatch.setattr(bench_load, "DEV", tmp_path / "en_ewt-ud-dev.conllu.gz")
    message = one_line_exit(bench_load.main, ["bench_load.py", "--options", "one-thread"], monkeypatch, capsys)
    assert message.startswith("needs ") and "en_ewt-ud-dev.conllu.gz" in message
    assert "except Exception" not in bench_load.CHILD


@pytest.mark.parametrize("argv, named", [
    (["--every", "0"], "--every"),
    (["--sentences", "-1"], "--sentences"),
    (["--weights", "/nonexistent"], "/nonexistent"),
])
def test_soak_arguments(argv, named, monkeypatch, capsys):
    monkeypatch.setattr(soak, "soak", _no_work)
    assert named in one_line_exit(soak.main, ["soak.py", *argv], monkeypatch, capsys)


def test_soak_refuses_a_run_that_checked_nothing():
    """Fewer than 2 samples after warm-up read as growth 0.0 and passed; no probe back read as difference 0."""
    one_after_warmup = [(1000, 500.0, 1.0), (9000, 900.0, 2.0)]
    with pytest.raises(ValueError, match="raise --tokens or lower --every"):
        soak.growth_after_warmup(one_after_warmup, warmup_tokens=5000)
    with pytest.raises(ValueError, match="raise --tokens or lower --every"):
        soak.growth_after_warmup([], warmup_tokens=0)
    assert soak.growth_after_warmup(one_after_warmup, warmup_tokens=0) == 400.0
    with pytest.raises(ValueError, match="probe not checked"):
        soak.probe_difference([])
    assert soak.probe_difference([0.0, 2e-7]) == 2e-7


@pytest.mark.parametrize("argv, named", [
    (["embedded", "--sections", "nope"], "nope"),  # exited 0 with a row of dashes
    (["embedded", "--references", "nope"], "nope"),
    (["/nonexistent", "--sections", "sense"], "/nonexistent"),
    (["embedded", "--limit", "-1"], "--limit"),
])
def test_bench_bilm(argv, named, monkeypatch, capsys):
    monkeypatch.setattr(bench_bilm, "evaluate", _no_work)
    assert named in one_line_exit(bench_bilm.main, ["bench_bilm.py", *argv], monkeypatch, capsys)


def test_bench_bilm_checks_the_teacher_first(monkeypatch, capsys):
    """--sections agreement ran the probes, then failed on the missing teacher with a DistillError."""
    monkeypatch.setattr(bench_bilm, "TEACHER", "no-such-teacher-package")
    monkeypatch.setattr(bench_bilm, "evaluate", _no_work)
    message = one_line_exit(bench_bilm.main, ["bench_bilm.py", "embedded", "--sections", "agreement"],
                            monkeypatch, capsys)
    assert "no-such-teacher-package" in message


def test_bench_finetune_memory_missing_pipeline(monkeypatch, capsys, tmp_path):
    """The child's traceback, then the parent's CalledProcessError."""
    monkeypatch.setattr(bench_finetune_memory.subprocess, "run", _no_work)
    message = one_line_exit(bench_finetune_memory.main,
                            ["bench_finetune_memory.py", str(tmp_path / "nope"), str(tmp_path / "train.spacy")],
                            monkeypatch, capsys)
    assert str(tmp_path / "nope") in message


def test_bench_distill_missing_teacher(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(bench_distill, "_training_setup", _no_work)
    message = one_line_exit(bench_distill.main, ["bench_distill.py", "--teacher", str(tmp_path / "no-teacher")],
                            monkeypatch, capsys)
    assert "no-teacher" in message


def test_bench_int8_refuses_negative_counts(monkeypatch, capsys):
    """-1 read as one sentence (and 0 as all, undocumented); now 0 is documented as all and -1 refused."""
    monkeypatch.setattr(bench_int8, "random_model", _no_work)
    monkeypatch.setattr(bench_int8, "embedded_bilm", _no_work)
    message = one_line_exit(bench_int8.main, ["bench_int8.py", "--small-sentences", "-1"], monkeypatch, capsys)
    assert "--small-sentences" in message


def test_check_huge_pages_has_help(monkeypatch, capsys):
    """--help ran the check."""
    monkeypatch.setattr(check_huge_pages, "faults", _no_work)
    monkeypatch.setattr(sys, "argv", ["check_huge_pages.py", "--help"])
    with pytest.raises(SystemExit) as caught:
        check_huge_pages.main()
    assert caught.value.code == 0
    assert "huge-page requests" in capsys.readouterr().out
