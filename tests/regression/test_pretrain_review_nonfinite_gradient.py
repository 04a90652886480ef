"""Regression: an inf gradient put NaN weights into the checkpoint and model-best.

The only finiteness check was on the loss, after `optimizer.step()`. With grad_clip an inf
gradient makes the clip factor 0, and inf * 0 is NaN: the step's loss was finite, but the
weights after it were NaN, and the evaluation and checkpoint of that step wrote them
(model-best, and position.best = NaN, so model-best never improved again; `--resume`
restarted from the poisoned checkpoint). The gradient norm is now checked before the
update: a non-finite one stops the run with one line naming the step, before anything is
written, so the last good checkpoint stays; weights that are not finite are never written,
and a NaN dev perplexity never counts as a new best."""
import math

import pytest
import torch

from spacy_elmo.pretrain import Trainer, load_config, pretrain
from spacy_elmo.pretrain.checkpoint import load_checkpoint
from spacy_elmo.pretrain.trainer import NonFiniteError, is_better

POISONED = 4  # the step whose gradient is inf


class InfGradientAt(Trainer):
    """A trainer whose character embedding gets an inf gradient at step POISONED."""

    def _build(self, state, start):
        super()._build(state, start)
        weight = self.lm.bilm.token_encoder.char_embed

        def hook(grad):
            return torch.full_like(grad, math.inf) if self.position.step + 1 == POISONED else grad

        weight.register_hook(hook)


def _config(tiny_config_path, small_corpus, **extra):
    return load_config(tiny_config_path, {
        "paths.train": str(small_corpus), "paths.dev": str(small_corpus), "corpus.dev_max_tokens": 300,
        "training.max_steps": 6, "training.eval_every": 4, "training.checkpoint_every": 2,
        "training.grad_clip": 10.0, "training.threads": 1, **extra,
    })


def _finite(weights) -> bool:
    return all(bool(torch.isfinite(t).all()) for t in weights.values() if t.is_floating_point())


@pytest.mark.parametrize("grad_clip", [10.0, 0.0])
def test_an_inf_gradient_stops_before_the_update_and_keeps_the_last_checkpoint(
    tiny_config_path, small_corpus, tmp_path, grad_clip
):
    config = _config(tiny_config_path, small_corpus, **{"training.grad_clip": grad_clip})
    run = tmp_path / "run"
    with pytest.raises(NonFiniteError, match=f"gradient norm became (inf|nan) at step {POISONED};") as err:
        InfGradientAt(config, run, progress=False).run()
    assert "\n" not in str(err.value)
    assert isinstance(err.value, ValueError)  # the command line prints it as one line
    state = load_checkpoint(run / "checkpoint.pt")
    assert state["progress"]["step"] == 2  # the last good checkpoint, untouched
    assert _finite(state["model"])
    assert state["progress"]["best"] is None  # no evaluation reached, no NaN best
    assert not (run / "model-best").exists()

    # the run resumes from the good checkpoint and ends with finite weights and a real best
    result = pretrain(config, run, resume=True, progress=False)
    state = load_checkpoint(run / "checkpoint.pt")
    assert result["step"] == state["progress"]["step"] == 6
    assert _finite(state["model"]) and math.isfinite(state["progress"]["best"])
    from safetensors.torch import load_file

    assert _finite(load_file(run / "model-best" / "bilm.safetensors"))


def test_non_finite_weights_are_never_written(tiny_config_path, small_corpus, tmp_path):
    from tests.pretrain.runs import _trainer

    trainer = _trainer(tiny_config_path, [small_corpus], tmp_path / "run")
    trainer._write_checkpoint()
    before = (tmp_path / "run" / "checkpoint.pt").read_bytes()
    with torch.no_grad():
        trainer.lm.bilm.token_encoder.char_embed[0, 0] = math.nan
    with pytest.raises(NonFiniteError, match="weights became non-finite .*char_embed"):
        trainer._write_checkpoint()
    with pytest.raises(NonFiniteError):
        trainer.save_model(trainer.paths.model_best, None)
    assert (tmp_path / "run" / "checkpoint.pt").read_bytes() == before
    assert not trainer.paths.model_best.exists()


def test_a_nan_dev_perplexity_is_never_a_new_best():
    assert not is_better(math.nan, None)
    assert not is_better(math.nan, 50.0)
    assert is_better(40.0, 50.0) and not is_better(60.0, 50.0) and is_better(60.0, None)
    assert is_better(60.0, math.nan)  # a NaN best kept by an older checkpoint is beaten by any number


def test_with_a_gradient_scaler_an_overflowed_step_is_skipped_as_before(tiny_config_path, small_corpus, tmp_path):
    """float16 on a GPU: the scaler's policy (skip the step, lower the scale) stays; a CPU GradScaler stands in."""
    from spacy_elmo.bilm.language_model import sentence_batch

    from tests.pretrain.runs import _trainer

    trainer = _trainer(tiny_config_path, [small_corpus], tmp_path / "run", **{"training.grad_clip": 10.0})
    trainer.scaler = torch.amp.GradScaler("cpu", init_scale=256.0)
    weight = trainer.lm.bilm.token_encoder.char_embed
    weight.register_hook(lambda grad: torch.full_like(grad, math.inf))
    batch = sentence_batch([["The", "bank", "of", "the", "river", "."]], trainer.vocab)
    before = {k: t.clone() for k, t in trainer.lm.state_dict().items()}
    trainer._step([batch])  # no error: the step is skipped
    assert trainer.position.step == 1 and trainer.scaler.get_scale() == 128.0
    for name, tensor in trainer.lm.state_dict().items():
        assert torch.equal(tensor, before[name]), name
