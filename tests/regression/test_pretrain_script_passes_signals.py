"""Regression: scripts/pretrain.py (and adapt.py, which runs pretraining through it) waited for the
`spacy_elmo pretrain` command with subprocess.call, so a Ctrl-C (sent to the whole process group, as a
terminal sends it) ended the script at once with a KeyboardInterrupt traceback while the command was
still writing its checkpoint, and a SIGTERM sent to the script alone left the command training on,
orphaned (its lock then refused the rerun). The stopped command also told the user to "continue with
--resume", an option the scripts do not have. The script now waits for the command through a Ctrl-C,
passes a SIGTERM on, exits with the command's code, and has it say to rerun the same command.

A stand-in command (a few lines of Python) takes the place of the pretraining, so the test needs no
training; it waits for files, never for a time.
"""
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from .watched_stderr import HANG

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"

COMMAND = textwrap.dedent("""
    import os, signal, sys, time
    from pathlib import Path
    folder = Path(sys.argv[1])

    def stop(signum, frame):
        time.sleep(0.5)  # writing a checkpoint takes a while
        (folder / "saved").write_text(signal.Signals(signum).name)
        sys.exit(128 + signum)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    (folder / "hint").write_text(os.environ.get("SPACY_ELMO_RESUME_HINT", ""))
    (folder / "ready").write_text("")
    while True:
        time.sleep(0.05)
""")

SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    import pretrain
    pretrain._run([sys.executable, sys.argv[2], sys.argv[3]])
""")


def _wait_for(path: Path, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + HANG  # a guard against a test that never ends, not a speed threshold
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path.name} never came"
        time.sleep(0.05)


@pytest.mark.parametrize("name, to_group, code", [("SIGINT", True, 130), ("SIGTERM", False, 143)])
def test_the_script_waits_for_the_command_and_exits_with_its_code(tmp_path, name, to_group, code):
    (tmp_path / "command.py").write_text(COMMAND)
    (tmp_path / "script.py").write_text(SCRIPT)
    with open(tmp_path / "stderr.txt", "w") as errors:  # a file, not a pipe: an orphan would hold a pipe open
        process = subprocess.Popen(
            [sys.executable, str(tmp_path / "script.py"), str(SCRIPTS), str(tmp_path / "command.py"), str(tmp_path)],
            start_new_session=True, stderr=errors, text=True,
            # a terminal's Ctrl-C reaches processes that did not inherit an ignored SIGINT (a job started
            # in the background without job control, as CI may start the suite, ignores it)
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
    try:
        _wait_for(tmp_path / "ready", process)
        signum = getattr(signal, name)
        if to_group:
            os.killpg(process.pid, signum)
        else:
            process.send_signal(signum)
        process.wait(timeout=HANG)  # the script waits for its command: "saved" exists once it has ended
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # an orphaned command, where the script left one
        except ProcessLookupError:
            pass
    stderr = (tmp_path / "stderr.txt").read_text()
    assert process.returncode == code, stderr
    assert (tmp_path / "saved").exists() and (tmp_path / "saved").read_text() == name  # its checkpoint, written
    assert "Traceback" not in stderr
    assert (tmp_path / "hint").read_text() == "rerun the same command to continue"
