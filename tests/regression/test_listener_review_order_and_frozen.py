"""Regression: a review of the listeners' training-time behaviour.

- The listener's batch check summed the docs' token ids, so the same docs in another order passed:
  each doc then got another doc's layers (shapes and all). The id now keeps the order.
- `scripts/finetune.py` unfroze the elmo component but left it in `[training] frozen_components`,
  which spaCy excludes from every update: a first stage configured that way was "fine-tuned" without
  its biLM changing, silently. It is now removed from that list, saying so.
"""
import argparse
import importlib.util
from pathlib import Path

import pytest

from tests.conftest import tagger_pipeline

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "finetune.py"


def test_the_same_docs_in_another_order_are_not_the_batch_received(allennlp_dir):
    nlp, examples, _ = tagger_pipeline(allennlp_dir)
    elmo = nlp.get_pipe("elmo")
    (listener,) = elmo.listeners
    elmo.update(examples[:2])
    docs = [eg.predicted for eg in examples[:2]]
    listener.verify_inputs(docs)  # the batch received
    with pytest.raises(ValueError, match="must be updated on the same docs"):
        listener.verify_inputs(docs[::-1])


def test_finetune_takes_elmo_out_of_frozen_components(allennlp_dir, tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("finetune_script", SCRIPT)
    finetune = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(finetune)
    nlp, _, _ = tagger_pipeline(allennlp_dir)
    nlp.config["training"]["frozen_components"] = ["elmo"]
    nlp.config["training"]["annotating_components"] = ["elmo"]
    args = argparse.Namespace(pipeline=str(tmp_path), train="train.spacy", dev="dev.spacy", learn_rate=1e-4,
                              patience=10, max_steps=5, seed=0)
    finetune.prepare(nlp, args)
    assert nlp.config["training"]["frozen_components"] == []
    assert nlp.get_pipe("elmo").frozen is False
    assert "frozen_components: ['elmo'] removed" in capsys.readouterr().err
