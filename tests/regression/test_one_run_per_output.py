"""Regression: two runs on one output folder both ran, mixing their files.

`pretrain` checked only that `checkpoint.pt` did not exist yet (it appears minutes into a run), so a
second run started beside the first overwrote its config.cfg, vocab.txt and log; two `--resume`s at
once (a job scheduler requeuing a job whose old copy still runs) both exited 0 over a log whose steps
went backwards. scripts/train.py and finetune.py staged model-last in one fixed folder that each
`--resume` deleted under the other ("[Errno 2] No such file ... model-last.tmp/morphologizer/cfg").
Each run now holds a lock beside its output (`RunLock`, as `embed` did already) from its first check
to its exit; a second run is refused with one line before it reads or writes anything there.

"Another run" is a lock held by this test (flock locks are per open file, so it refuses this
process's second open as it refuses another process's): deterministic, nothing racing.
"""
import hashlib
import shutil
import sys
from pathlib import Path

import pytest

from spacy_elmo.io.file_lock import OutputBusyError, RunLock, output_lock, run_lock_path
from spacy_elmo.pretrain import load_config, pretrain, run_finished
from tests.regression.test_pretrain_and_adapt_scripts_check_settings import _main
from tests.regression.test_train_script_exit_status_and_settings import SCRIPTS, _script, _train, project  # noqa: F401

BUSY = "is being written by another run"


def _snapshot(folder: Path) -> dict:
    """Every file under `folder` (hidden lock files beside it are not in it) and its contents' digest."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_lock_is_refused_while_held_and_taken_once_released(tmp_path):
    output = tmp_path / "runs" / "x"
    held = output_lock(output)  # creates the missing parent, not the output
    assert run_lock_path(output) == tmp_path / "runs" / ".x.lock" and not output.exists()
    with pytest.raises(OutputBusyError, match=BUSY):
        output_lock(output)
    RunLock(run_lock_path(output, "pretrain"), output).release()  # another kind is another lock
    held.release()
    assert not run_lock_path(output).exists()
    with output_lock(output):
        pass
    assert not run_lock_path(output).exists()


def test_pretrain_refuses_a_folder_another_run_holds(tiny_config_path, small_corpus, tmp_path):
    config = load_config(tiny_config_path, {"paths.train": str(small_corpus), "training.max_steps": 2,
                                            "training.eval_every": 1000, "training.threads": 1})
    output = tmp_path / "run"
    pretrain(config, output, progress=False)
    before = _snapshot(output)
    with output_lock(output, "pretrain"):
        for resume in (False, True):
            with pytest.raises(OutputBusyError, match=BUSY):
                pretrain(config, output, resume=resume, progress=False)
    assert _snapshot(output) == before and run_finished(output)
    assert not run_lock_path(output, "pretrain").exists()  # released by the finished run, not left behind


def test_the_pretrain_command_says_so_in_one_line(tiny_config_path, small_corpus, tmp_path):
    from spacy_elmo.cli import app
    from tests.cli.invoke import flat, runner

    output = tmp_path / "run"
    with output_lock(output, "pretrain"):
        result = runner.invoke(app, ["pretrain", str(tiny_config_path), str(output), "--paths.train",
                                     str(small_corpus), "--training.max_steps", "2"])
    assert result.exit_code == 1 and BUSY in flat(result) and not output.exists()


def test_train_script_refuses_an_output_another_run_holds(monkeypatch, capsys, project, tmp_path):  # noqa: F811
    output = tmp_path / "out"
    with output_lock(output):
        assert _train(monkeypatch, project, output, "--max-steps", "2") == 1
        assert BUSY in capsys.readouterr().err and not output.exists()
    assert _train(monkeypatch, project, output, "--max-steps", "2") == 0
    assert not run_lock_path(output).exists()
    before = _snapshot(output)
    with output_lock(output):
        for extra in (["--resume"], ["--overwrite"]):  # neither reads, deletes nor logs anything
            assert _train(monkeypatch, project, output, "--max-steps", "2", *extra) == 1
            assert BUSY in capsys.readouterr().err
    assert _snapshot(output) == before


def test_finetune_script_refuses_an_output_another_run_holds(monkeypatch, capsys, tmp_path):
    output = tmp_path / "tuned"
    monkeypatch.setattr(sys, "argv", ["finetune.py", str(tmp_path / "frozen"), str(output), "--train",
                                      str(tmp_path / "t.spacy"), "--dev", str(tmp_path / "d.spacy"), "--resume"])
    with output_lock(output), pytest.raises(SystemExit) as exited:
        _script("finetune").main()
    assert BUSY in str(exited.value.code) and not output.exists()


@pytest.mark.parametrize("kind", ["", "pretrain"], ids=["the-script-runs", "its-pretrain-command-runs"])
@pytest.mark.parametrize("name", ["pretrain", "adapt"])
def test_the_pretrain_and_adapt_scripts_never_touch_a_live_run(monkeypatch, capsys, tiny_config_path, small_corpus,
                                                               tmp_path, name, kind):
    """Also where only the `pretrain` command runs there (started by hand, or left running by a killed
    script): the second look found --overwrite deleting its folder, then being refused."""
    monkeypatch.syspath_prepend(str(SCRIPTS))
    module = _script(name)
    calls = []
    monkeypatch.setattr(module, "run_pretrain", lambda config, output, settings: calls.append(output))
    output = tmp_path / "live"
    output.mkdir()
    (output / "checkpoint.pt").write_bytes(b"the live run's")
    command = ["--elmo-model", "pretrained", "--config", tiny_config_path, "--train", small_corpus,
               "--dev", small_corpus, "--output", output, "--overwrite"]
    if name == "pretrain":
        command += ["--word-table", "none", "--passes", "1"]
    else:
        shutil.copytree(output, tmp_path / "model")
        command += ["--pretrained-dir", tmp_path / "model"]
    with output_lock(output, kind):
        assert _main(monkeypatch, module, name, *command) == 1
    assert BUSY in capsys.readouterr().err and calls == []
    assert (output / "checkpoint.pt").read_bytes() == b"the live run's"  # --overwrite deleted nothing


def test_an_output_named_dot_is_locked_beside_it(monkeypatch, tmp_path):
    """Regression (second look): `pretrain CONFIG .` failed with "PosixPath('.') has an empty name"."""
    (tmp_path / "run").mkdir()
    monkeypatch.chdir(tmp_path / "run")
    assert run_lock_path(Path(".")) == tmp_path / ".run.lock"
    with output_lock(Path(".")):
        with pytest.raises(OutputBusyError, match=BUSY):
            output_lock(tmp_path / "run")


def test_a_folder_in_a_read_only_parent_is_locked_inside(monkeypatch, tmp_path):
    """Regression (second look): a writable output folder in a read-only parent (a container's bind mount)
    could no longer be trained into: the lock beside it could not be created."""
    from spacy_elmo.io import file_lock

    output = tmp_path / "mounted"
    output.mkdir()
    real_access = file_lock.os.access
    monkeypatch.setattr(file_lock.os, "access", lambda path, mode: False if Path(path) == tmp_path
                        else real_access(path, mode))
    lock = output_lock(output, "pretrain")
    assert lock.path.parent == output and not run_lock_path(output, "pretrain").exists()
    with pytest.raises(OutputBusyError, match=BUSY):
        output_lock(output, "pretrain")
    lock.release()
    assert list(output.iterdir()) == []
