"""Regression: scripts/train.py exited 0 for a stopped run, deleted a finished one, and wiped train.log.

- A run stopped by Ctrl-C, SIGTERM or its --max-minutes budget exited 0, so `spacy project run`
  recorded the step in project.lock and went on to the next step with a half-trained model. It
  now exits 130 (SIGINT), 143 (SIGTERM) or 3 (the time budget), with a line saying --resume
  continues it; only a run that reached its end exits 0.
- A fresh start on an output holding a finished run deleted it (hours lost after the README's
  --resume recipe). The run now records its settings (run_settings.json); the same settings keep
  it ("nothing to do", exit 0), other settings are refused with the difference named.
- A refused fresh start had already emptied train.log.
- After --resume, wall_time.json said "overrides": null and gave only the resuming command.

Runs go in this process (the script's main()), on a tiny tagger. Signals are raised by a
registered before_update callback at a fixed step and the clock is a fake one: no sleeps, no
timing.
"""
import importlib.util
import json
import signal
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import spacy
from spacy.tokens import DocBin
from spacy.util import registry

from spacy_elmo.resumable_training import (
    EXIT_TIME_BUDGET, MODEL_LAST, RUN_SETTINGS, SettingsChanged, read_state, train_resumable,
)
from tests.conftest import tagged_examples

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"

CONFIG = """
[paths]
train = null
dev = null

[system]
seed = 0
gpu_allocator = null

[nlp]
lang = "en"
pipeline = ["tok2vec","tagger"]

[components]

[components.tok2vec]
factory = "tok2vec"

[components.tok2vec.model]
@architectures = "spacy.HashEmbedCNN.v2"
pretrained_vectors = null
width = 16
depth = 1
embed_size = 200
window_size = 1
maxout_pieces = 2
subword_features = false

[components.tagger]
factory = "tagger"

[components.tagger.model]
@architectures = "spacy.Tagger.v2"
nO = null

[components.tagger.model.tok2vec]
@architectures = "spacy.Tok2VecListener.v1"
width = 16
upstream = "*"

[corpora]

[corpora.train]
@readers = "spacy.Corpus.v1"
path = ${paths.train}

[corpora.dev]
@readers = "spacy.Corpus.v1"
path = ${paths.dev}

[training]
seed = ${system.seed}
gpu_allocator = ${system.gpu_allocator}
dropout = 0.1
patience = 0
max_epochs = 0
max_steps = 6
eval_frequency = 2

[training.batcher]
@batchers = "spacy.batch_by_sequence.v1"
size = 2
get_length = null

[training.optimizer]
@optimizers = "Adam.v1"
learn_rate = 0.01
"""


@registry.callbacks("test-train-script-raise-signal.v1")
def _raise_signal(step: int, name: str):
    """A before_update callback that delivers signal `name` to this process before step `step`."""
    def before_update(nlp, info):
        if info["step"] == step:
            signal.raise_signal(getattr(signal, name))

    return before_update


def _script(name: str):
    """scripts/NAME.py as a module, loaded afresh (its main() is what the command line runs)."""
    spec = importlib.util.spec_from_file_location(f"_script_{name}", SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def project(tmp_path):
    """A tiny tagger config and its corpora: (config, train, dev)."""
    nlp = spacy.blank("en")
    docs = [eg.reference for eg in tagged_examples(nlp)]
    DocBin(docs=docs * 4).to_disk(tmp_path / "train.spacy")
    DocBin(docs=docs).to_disk(tmp_path / "dev.spacy")
    (tmp_path / "tagger.cfg").write_text(CONFIG, encoding="utf-8")
    return tmp_path / "tagger.cfg", tmp_path / "train.spacy", tmp_path / "dev.spacy"


def _train(monkeypatch, project, output, *extra) -> int:
    """scripts/train.py CONFIG OUTPUT --train --dev EXTRA in this process; its exit status."""
    config, train, dev = project
    argv = ["train.py", str(config), str(output), "--train", str(train), "--dev", str(dev), *map(str, extra)]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exited:
        _script("train").main()
    return _status(exited.value.code)


def _status(code) -> int:
    """The exit status of SystemExit(code), whose message goes to stderr as the interpreter prints it."""
    if isinstance(code, str):
        print(code, file=sys.stderr)
        return 1
    return 0 if code is None else code


def _wall(output: Path) -> dict:
    return json.loads((output / "wall_time.json").read_text())


@pytest.mark.parametrize("name,code", [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_signal_stopped_run_exits_with_the_signals_status(monkeypatch, capsys, project, tmp_path, name, code):
    output = tmp_path / "out"
    stop = json.dumps({"@callbacks": "test-train-script-raise-signal.v1", "step": 2, "name": name})
    assert _train(monkeypatch, project, output, "--training.before_update", stop) == code
    err = capsys.readouterr().err
    assert f"interrupted by {name} at step 3" in err and "--resume" in err
    assert read_state(output)["stopped"] == "interrupted"
    assert _wall(output)["returncode"] == code and _wall(output)["stopped"] == "interrupted"


def test_a_time_budget_exits_3_and_the_natural_end_exits_0(monkeypatch, capsys, project, tmp_path):
    import spacy_elmo.resumable_training as resumable

    clock = {"now": 0.0}

    def monotonic() -> float:  # a minute of "training" each time the loop looks
        clock["now"] += 60.0
        return clock["now"]

    monkeypatch.setattr(resumable, "time", SimpleNamespace(monotonic=monotonic))
    output = tmp_path / "out"
    assert _train(monkeypatch, project, output, "--max-minutes", "1.5") == EXIT_TIME_BUDGET
    err = capsys.readouterr().err
    assert "--max-minutes budget" in err and "--resume" in err and len(err.strip().splitlines()) == 1
    assert _wall(output)["stopped"] == "time budget" and _wall(output)["returncode"] == EXIT_TIME_BUDGET
    stopped_at = read_state(output)["step"]
    monkeypatch.undo()  # the real clock again: the run goes on to its step cap
    assert _train(monkeypatch, project, output, "--resume") == 0
    state = read_state(output)
    assert state["stopped"] == "max steps" and state["step"] == 7 > stopped_at
    assert _wall(output)["returncode"] == 0


def test_a_finished_run_is_kept_or_refused_never_deleted(monkeypatch, capsys, project, tmp_path):
    output = tmp_path / "out"
    stop = json.dumps({"@callbacks": "test-train-script-raise-signal.v1", "step": 2, "name": "SIGTERM"})
    assert _train(monkeypatch, project, output, "--training.before_update", stop) == 143
    first_overrides = _wall(output)["overrides"]
    # an unfinished run is refused, and its train.log kept
    log = (output / "train.log").read_text()
    assert "Pipeline" in log
    assert _train(monkeypatch, project, output, "--training.before_update", stop) == 1
    assert "unfinished run" in capsys.readouterr().err
    assert (output / "train.log").read_text() == log
    # the README's recipe: --resume to the end (the resumed process receives no signal)
    assert _train(monkeypatch, project, output, "--resume") == 0
    wall = _wall(output)
    assert wall["overrides"] == first_overrides and wall["overrides"]["training.before_update"]
    assert "--resume" not in wall["command"] and "--resume" in wall["resumes"][-1]
    finished = read_state(output)
    assert finished["stopped"] == "max steps"
    model_last = (output / MODEL_LAST / "training_state.json").stat().st_mtime_ns
    log = (output / "train.log").read_text()

    # the workflow's command line again: the same settings, so the run is kept and nothing is done
    capsys.readouterr()
    assert _train(monkeypatch, project, output, "--training.before_update", stop) == 0
    assert "has finished with the same settings; nothing to do" in capsys.readouterr().out
    assert (output / MODEL_LAST / "training_state.json").stat().st_mtime_ns == model_last
    assert (output / "train.log").read_text() == log

    # other settings: refused, naming the difference and the remedies; nothing touched
    assert _train(monkeypatch, project, output, "--training.before_update", stop, "--max-steps", "4") == 1
    err = capsys.readouterr().err
    assert "overrides.training.max_steps: (unset) -> 4" in err and "--overwrite" in err and "delete" in err
    config, train, dev = project
    DocBin(docs=list(DocBin().from_disk(train).get_docs(spacy.blank("en").vocab))[:3]).to_disk(train)
    assert _train(monkeypatch, project, output, "--training.before_update", stop) == 1
    assert f"train: {train}" in capsys.readouterr().err
    assert read_state(output) == finished and (output / "train.log").read_text() == log

    # --overwrite always starts again
    assert _train(monkeypatch, project, output, "--overwrite") == 0
    assert json.loads((output / RUN_SETTINGS).read_text())["settings"]["train"]["bytes"] == train.stat().st_size
    assert "has finished" not in capsys.readouterr().out


def test_train_resumable_keeps_a_finished_run_of_the_same_pipeline(project, tmp_path):
    """The library too: a fresh start over a finished run of the same config and corpora returns it."""
    from spacy.training.initialize import init_nlp

    config_path, train, dev = project

    def pipeline(**training):
        config = spacy.util.load_config(config_path, interpolate=False,
                                        overrides={"paths.train": str(train), "paths.dev": str(dev), **training})
        return init_nlp(config)

    done = train_resumable(pipeline(), tmp_path / "out")
    assert done["stopped"] == "max steps"
    again = train_resumable(pipeline(), tmp_path / "out")
    assert again == read_state(tmp_path / "out") and again["step"] == done["step"]
    with pytest.raises(SettingsChanged, match="config_sha256"):
        train_resumable(pipeline(**{"training.max_steps": 2}), tmp_path / "out")
    assert train_resumable(pipeline(**{"training.max_steps": 2}), tmp_path / "out", overwrite=True)["step"] == 3
