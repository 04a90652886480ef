"""scripts/finetune.py: a trained ELMo pipeline goes on training with its biLM unfrozen."""
import json
import subprocess
import sys
from pathlib import Path

import numpy
import spacy
from spacy.tokens import DocBin

from tests.conftest import tagger_pipeline

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "finetune.py"


def _bilm_weights(nlp) -> numpy.ndarray:
    return numpy.concatenate([p.detach().numpy().ravel() for p in nlp.get_pipe("elmo").bilm.parameters()])


def test_finetune_updates_the_biLM_and_saves_an_unfrozen_pipeline(allennlp_dir, tmp_path):
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir)
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    nlp.to_disk(tmp_path / "frozen")
    DocBin(docs=[eg.reference for eg in examples] * 4).to_disk(tmp_path / "train.spacy")
    DocBin(docs=[eg.reference for eg in examples]).to_disk(tmp_path / "dev.spacy")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "frozen"), str(tmp_path / "tuned"),
         "--train", str(tmp_path / "train.spacy"), "--dev", str(tmp_path / "dev.spacy"),
         "--max-steps", "4", "--learn-rate", "0.001"],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    tuned = spacy.load(tmp_path / "tuned" / "model-last")
    assert tuned.get_pipe("elmo").frozen is False
    assert tuned.config["components"]["elmo"]["frozen"] is False
    assert tuned.config["training"]["optimizer"]["learn_rate"] == 0.001
    before = _bilm_weights(spacy.load(tmp_path / "frozen"))
    after = _bilm_weights(tuned)
    assert before.shape == after.shape and not numpy.array_equal(before, after)
    assert [t.tag_ for t in tuned("the cat sat")]  # it tags
    lines = (tmp_path / "tuned" / "log.jsonl").read_text().splitlines()
    assert lines and "elmo" in json.loads(lines[-1])["losses"]  # the biLM is trained, its loss logged
    wall = json.loads((tmp_path / "tuned" / "wall_time.json").read_text())
    assert wall["from"] == str(tmp_path / "frozen") and wall["seconds"] > 0
    assert wall["stopped"] == "max steps" and wall["steps"] == 5

    # an unfinished run (as a crash leaves it) is kept from a fresh start, and --resume continues it
    state_path = tmp_path / "tuned" / "model-last" / "training_state.json"
    state = json.loads(state_path.read_text())
    state_path.write_text(json.dumps(dict(state, stopped=None, step=3)))
    command = [sys.executable, str(SCRIPT), str(tmp_path / "frozen"), str(tmp_path / "tuned"),
               "--train", str(tmp_path / "train.spacy"), "--dev", str(tmp_path / "dev.spacy"), "--max-steps", "4"]
    refused = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert refused.returncode != 0 and "unfinished run" in refused.stderr and "--resume" in refused.stderr
    resumed = subprocess.run(command + ["--resume"], capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "Resuming at step 3" in resumed.stdout
    wall = json.loads((tmp_path / "tuned" / "wall_time.json").read_text())
    assert wall["from"] == str(tmp_path / "frozen") and wall["stopped"] == "max steps" and wall["steps"] == 5
    assert wall["learn_rate"] == 0.001


def test_finetune_refuses_a_pipeline_without_elmo(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("tagger")
    nlp.to_disk(tmp_path / "plain")
    for name in ("t.spacy", "d.spacy"):  # corpora that exist (a missing one is refused first)
        (tmp_path / name).write_bytes(b"")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "plain"), str(tmp_path / "out"),
         "--train", str(tmp_path / "t.spacy"), "--dev", str(tmp_path / "d.spacy")],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode != 0 and "no 'elmo' component" in done.stderr
