"""Regression: documentation that said what the code does not do.

- docs/project.md and resumable_training.SIGNAL_EXIT's note said SIGTERM gives 143 "as `python -m
  spacy_elmo pretrain` exits"; pretrain then exited 130 after either signal. It now exits 143 after
  SIGTERM, as the training scripts do, and every page names both statuses.
- MODEL_CARD.md suggested `weights=` "elmo_2x4096_512_2048cnn_2xhighway", which is refused (the
  catalogue name is `original`), and called its commands the project's `pretrain` step, which runs
  them with the config's `threads = 2`, not 1.
- project.yml's `report` read each run's log.jsonl, train.log, wall_time.json and model-best/meta.json
  without declaring them; `adapt-ewt` and `static-vectors` did not say that they read
  training/pretrain/model-best with elmo_model=pretrained.
- scripts/train.py's usage left out `--elmo-model none`, its default.
Each is now true, and checked here against the code."""
import argparse
import ast
import re
from pathlib import Path

import pytest
import srsly

from spacy_elmo.cli import app
from spacy_elmo.resumable_training import SIGNAL_EXIT

from ..cli.invoke import runner
from ..text import page

ROOT = Path(__file__).resolve().parents[2]
CARD = ROOT / "spacy_elmo" / "models" / "en_elmo_2x512_128" / "MODEL_CARD.md"


@pytest.mark.parametrize("action,name", [("term", "SIGTERM"), ("int", "SIGINT")])
def test_pretrain_exits_with_the_status_every_page_names(tiny_config_path, small_corpus, tmp_path, inject,
                                                         action, name):
    inject(f"pretrain.step:2:{action}")
    result = runner.invoke(app, ["pretrain", str(tiny_config_path), str(tmp_path / "run"), "--quiet",
                                 "--paths.train", str(small_corpus), "--training.max_steps", "4",
                                 "--training.eval_every", "1000", "--training.threads", "1"])
    assert (tmp_path / "run" / "model-last").is_dir(), result.output
    assert result.exit_code == SIGNAL_EXIT[name] == {"SIGINT": 130, "SIGTERM": 143}[name]
    pattern = r"status 130 \(SIGINT\), 143 \(SIGTERM\) or 129 \(SIGHUP\)"
    named = {
        "cli.md": re.search(r"On SIGINT, SIGTERM or SIGHUP .*? the command .*? " + pattern,
                            page(ROOT / "docs" / "cli.md")),
        "pretraining.md": re.search(r"SIGTERM \(e\.g\. from a job scheduler\) .*? " + pattern,
                                    page(ROOT / "docs" / "pretraining.md")),
        "project.md": re.search(r"the exit status is 130 \(SIGINT\), 143 \(SIGTERM\) or 129 \(SIGHUP\).{0,120}? as "
                                r"`python -m spacy_elmo pretrain` .{0,80}? does", page(ROOT / "docs" / "project.md")),
    }
    assert all(named.values()), named
    assert "after either signal" not in page(ROOT / "spacy_elmo" / "resumable_training.py")


def test_the_model_cards_weights_example_is_a_catalogue_name():
    from spacy_elmo.io.catalogue import lookup

    sentence = re.search(r"pass `weights=` a published ELMo \(e\.g\. `([^`]+)`", page(CARD))
    assert sentence and lookup(sentence.group(1)) is not None, sentence


def test_the_model_card_says_how_its_commands_differ_from_the_project_step():
    text = page(CARD)
    project = srsly.read_yaml(ROOT / "project.yml")
    (step,) = [c for c in project["commands"] if c["name"] == "pretrain"]
    assert "scripts/pretrain.py" in step["script"][0] and "--training.threads" not in step["script"][0]
    threads = re.search(r"^threads = (\d+)", (ROOT / "configs" / "pretrain_en_2x512_128.cfg").read_text(), re.M)
    assert "--training.threads 1" in text and f"`threads = {threads.group(1)}`" in text
    assert "the same as the project's `pretrain` step" not in text


def test_report_declares_what_it_reads():
    project = srsly.read_yaml(ROOT / "project.yml")
    commands = {c["name"]: c for c in project["commands"]}
    report_source = (ROOT / "scripts" / "report.py").read_text()
    runs = re.search(r"^RUNS = (\[.*\])", report_source, re.M).group(1)
    deps = set(commands["report"]["deps"])
    for run in ast.literal_eval(runs):  # the script's own list of runs
        assert f"metrics/{run}.json" in deps
        for name in ("log.jsonl", "train.log", "wall_time.json", "model-best/meta.json"):
            assert f"training/{run}/{name}" in deps, (run, name)
    # every run folder report reads is one a command of the `all` workflow writes
    written = {o.split("/model-best")[0] for c in commands.values() for o in c.get("outputs", [])}
    assert {d.split("/")[0] + "/" + d.split("/")[1] for d in deps if d.startswith("training/")} <= written
    for name in ("adapt-ewt", "static-vectors"):
        assert "training/pretrain/model-best" in commands[name]["help"]
        assert not any("training/pretrain" in d for d in commands[name].get("deps", []))


def test_train_script_usage_names_every_elmo_model_choice(monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("train_script", ROOT / "scripts" / "train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    seen = {}

    def parse_known_args(parser, *args, **kwargs):
        seen.update({a.dest: a for a in parser._actions})
        raise SystemExit(0)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", parse_known_args)
    try:
        module.main()
    except SystemExit:
        pass
    choices = seen["elmo_model"].choices
    usage = re.search(r"\[--elmo-model ([a-z|]+)\]", module.__doc__).group(1).split("|")
    assert sorted(usage) == sorted(choices) and usage[0] == seen["elmo_model"].default
