"""Regression: the progress bar's step estimate ignored how each mode fills a step.

It was n_tokens / batch_tokens in both modes, but a `stream` step takes batch_size *
unroll_steps positions (batch_tokens plays no part there), and every segment also takes
its <S> and </S> positions, which `sentences` batches count against batch_tokens. The
estimate now follows each mode (and accumulate_steps) and is within 15% of the steps an
epoch really takes."""
import pytest

from spacy_elmo.pretrain import Trainer, load_config

from ..conftest import heldout_corpus


@pytest.fixture
def corpus(tmp_path, data_dir):
    """About 8,000 tokens of the heldout pretraining text."""
    return heldout_corpus(data_dir, tmp_path / "corpus.txt", 300)


@pytest.mark.parametrize("settings", [
    {"training.mode": "sentences", "training.batch_tokens": 512},
    {"training.mode": "sentences", "training.batch_tokens": 256, "training.accumulate_steps": 2},
    {"training.mode": "stream", "training.batch_size": 8, "training.unroll_steps": 20},
    {"training.mode": "stream", "training.batch_size": 4, "training.unroll_steps": 20, "training.accumulate_steps": 2},
], ids=["sentences", "sentences-accumulated", "stream", "stream-accumulated"])
def test_the_estimate_is_near_the_steps_of_an_epoch(tiny_config_path, corpus, tmp_path, settings):
    config = load_config(tiny_config_path, {
        "paths.train": str(corpus), "training.max_epochs": 1, "training.max_steps": 0,
        "training.eval_every": 1000, "training.checkpoint_every": 1000, "training.threads": 1,
        "model.n_layers": 1, "softmax.kind": "sampled", "softmax.n_samples": 32, **settings,
    })
    trainer = Trainer(config, tmp_path / "run", progress=False)
    taken = trainer.run()["step"]
    estimate = trainer._estimated_steps()
    assert taken >= 10, taken
    assert abs(estimate - taken) <= 0.15 * taken, (estimate, taken)
    # a max_steps beyond the epochs does not make the bar's total
    config["training"]["max_steps"] = 10 * taken
    assert trainer._estimated_steps() == estimate
    config["training"]["max_steps"] = 3
    assert trainer._estimated_steps() == 3
