"""Regression: a run started with [paths] init_from could not be resumed.

`start_model` replaces the config's [model] with the start model's architecture and the
checkpoint saves that config; a resume does not call it, so the user's own [model] (for
configs/pretrain_adapt_ewt.cfg, which has none: the defaults) was compared with the saved
one and refused ("was trained with a different architecture; cannot resume"). Every
interrupted scripts/adapt.py run failed that way. A resume now takes the architecture
from the checkpoint's config again."""
import pytest
import torch

from spacy_elmo.pretrain import Interrupted, load_config, pretrain


def _weights(run_dir):
    state = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    return state["model"], state["progress"]["step"]


def test_an_interrupted_init_from_run_resumes_to_the_uninterrupted_weights(tiny_config_path, small_corpus, tmp_path,
                                                                           inject, monkeypatch):
    base = {"paths.train": str(small_corpus), "training.eval_every": 1000, "training.checkpoint_every": 1000,
            "training.threads": 1}
    pretrain(load_config(tiny_config_path, {**base, "training.max_steps": 2}), tmp_path / "start", progress=False)
    # the config's [model] differs from the start model's (lstm_dim 64): start_model replaces it
    continued = {**base, "paths.init_from": str(tmp_path / "start" / "model-last"), "model.lstm_dim": 32,
                 "model.dropout": 0.1, "training.max_steps": 6}
    pretrain(load_config(tiny_config_path, continued), tmp_path / "full", progress=False)

    inject("pretrain.step:3:term")  # SIGTERM after the third step
    with pytest.raises(Interrupted, match="at step 3"):
        pretrain(load_config(tiny_config_path, continued), tmp_path / "resumed", progress=False)
    inject("")  # no more faults
    result = pretrain(load_config(tiny_config_path, continued), tmp_path / "resumed", resume=True, progress=False)
    assert result["step"] == 6

    a, step_a = _weights(tmp_path / "full")
    b, step_b = _weights(tmp_path / "resumed")
    assert step_a == step_b == 6
    assert a["bilm.lstm.weight_hh.0"].shape[-1] == 4 * 64  # the start model's lstm_dim was trained
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=0, msg=name)
    # and the resumed run's config.cfg still describes what is trained
    assert "lstm_dim = 64" in (tmp_path / "resumed" / "config.cfg").read_text()


def test_a_run_without_init_from_still_refuses_another_architecture(tiny_config_path, small_corpus, tmp_path):
    from spacy_elmo.pretrain import SettingsError

    base = {"paths.train": str(small_corpus), "training.eval_every": 1000, "training.max_steps": 1,
            "training.threads": 1}
    pretrain(load_config(tiny_config_path, base), tmp_path / "run", progress=False)
    with pytest.raises(SettingsError, match="different architecture"):
        pretrain(load_config(tiny_config_path, {**base, "model.lstm_dim": 32}), tmp_path / "run", resume=True,
                 progress=False)
