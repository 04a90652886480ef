"""Regression: SIGHUP (a closed terminal, a dropped ssh session) was handled nowhere.

A review that stopped every command with SIGINT, SIGTERM and SIGHUP found that SIGHUP killed
`pretrain` without its checkpoint (40 steps lost, and --resume found nothing), `train.py` and
`finetune.py` without saving model-last at the step, and `embed` leaving a remote output's local
copy behind: SIGHUP now stops them as SIGTERM does, exit 129. And scripts/pretrain.py (adapt.py
through it) exited 241, without a word, when its command died of a signal before it could handle
it: it now exits 128 + the signal's number, saying so.
"""
import os
import signal
import subprocess
import sys
import threading

import h5py
import pytest

from spacy_elmo.faults import VARIABLE
from spacy_elmo.io import load_model
from spacy_elmo.resumable_training import stop_on_signals
from tests.regression.test_train_script_exit_status_and_settings import SCRIPTS, _script


def _command(args, fault="", **kwargs):
    env = {k: v for k, v in os.environ.items() if k != VARIABLE}
    env["OMP_NUM_THREADS"] = "1"
    if fault:
        env[VARIABLE] = fault
    return subprocess.run([sys.executable, "-m", "spacy_elmo", *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=600, **kwargs)


def test_pretraining_saves_its_checkpoint_at_a_hangup(tiny_config_path, small_corpus, tmp_path):
    args = ["pretrain", tiny_config_path, tmp_path / "run", "--paths.train", small_corpus, "--training.max_steps", 4,
            "--training.checkpoint_every", 1000, "--training.threads", 1]
    stopped = _command(args, fault="pretrain.step:2:hup")
    assert stopped.returncode == 129, stopped.stderr[-2000:]
    assert "stopped by SIGHUP at step 2; checkpoint written" in " ".join((stopped.stdout + stopped.stderr).split())
    resumed = _command(args + ["--resume"])
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert load_model(tmp_path / "run" / "model-last").metadata["step"] == 4


def test_embed_stops_at_a_hangup_keeping_what_it_wrote(tmp_path, allennlp_dir):
    text = tmp_path / "in.txt"
    text.write_text("The cat sat .\nA dog ran off .\nHello there .\n", encoding="utf-8")
    out = tmp_path / "out.hdf5"
    stopped = _command(["embed", text, out, "-w", allennlp_dir, "--chunk-lines", 1, "-q"], fault="embed.chunk:1:hup")
    assert stopped.returncode == 129, stopped.stdout + stopped.stderr
    assert "Interrupted by SIGHUP" in " ".join((stopped.stdout + stopped.stderr).split())
    assert _command(["embed", text, out, "-w", allennlp_dir, "--chunk-lines", 1, "-q", "--resume"]).returncode == 0
    with h5py.File(out, "r") as f:
        assert f.attrs["status"] == "complete"


def test_training_stops_at_a_hangup():
    unhandled = []

    def fallback(signum, frame):  # what runs where stop_on_signals does not take SIGHUP (not the default: death)
        unhandled.append(signum)

    previous = signal.signal(signal.SIGHUP, fallback)
    try:
        stop, received = threading.Event(), []
        with stop_on_signals(stop, received):
            signal.raise_signal(signal.SIGHUP)
        assert stop.is_set() and received == ["SIGHUP"] and unhandled == []
        assert signal.getsignal(signal.SIGHUP) is fallback  # given back
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_the_pretrain_script_names_a_command_killed_before_it_began(monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(SCRIPTS))
    script = _script("pretrain")
    killed = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"]
    with pytest.raises(SystemExit) as exited:
        script._run(killed)
    assert exited.value.code == 143
    assert "stopped by SIGTERM before it began training" in capsys.readouterr().err


def test_corpus_writes_both_files_or_neither_at_an_interrupt(tmp_path, monkeypatch, ewt_dir):
    from spacy_elmo import gold_data
    from spacy_elmo.cli import app
    from tests.cli.invoke import runner

    source = sorted(ewt_dir.glob("*dev*.conllu*"))[0]
    train, dev = tmp_path / "train.spacy", tmp_path / "dev.spacy"
    args = ["corpus", "ud", str(source), str(train), "--dev-output", str(dev), "--dev-split", "shuffled"]
    assert runner.invoke(app, args + ["--seed", "0"]).exit_code == 0
    before = train.read_bytes(), dev.read_bytes()
    real, calls = gold_data.write_docbin, []

    def interrupted_second(docs, path):
        calls.append(path)
        if len(calls) == 2:  # Ctrl-C while the dev file is written, the new training file done
            raise KeyboardInterrupt
        return real(docs, path)

    monkeypatch.setattr(gold_data, "write_docbin", interrupted_second)
    result = runner.invoke(app, args + ["--seed", "1"])
    assert result.exit_code == 130 and len(calls) == 2  # typer's exit at a KeyboardInterrupt
    assert (train.read_bytes(), dev.read_bytes()) == before  # neither replaced: no new train beside an old dev
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dev.spacy", "train.spacy"]  # no temporaries left
