"""Regression: a training text too small for one optimizer step "trained" 0 steps and exited 0.

With `accumulate_steps = 2` and a text that makes one batch, every epoch ran
out before a step could be taken: `pretrain` printed "Trained 0 steps on 0
tokens" and wrote an untrained model as if all had gone well. It is now a
`SettingsError` naming the sizes and what to change.
"""
import pytest

from spacy_elmo.pretrain import SettingsError, load_config, pretrain


def test_a_text_below_one_step_is_refused_naming_the_sizes(tiny_config_path, tmp_path):
    text = tmp_path / "tiny.txt"
    text.write_text("the cat sat on the mat .\na dog ran off .\n", encoding="utf-8")
    config = load_config(tiny_config_path, {"paths.train": str(text), "training.accumulate_steps": 2,
                                            "training.max_steps": 4, "training.threads": 1})
    with pytest.raises(SettingsError, match=r"fewer batches than one optimizer step.*accumulate_steps = 2"):
        pretrain(config, tmp_path / "run", progress=False)
    config = load_config(tiny_config_path, {"paths.train": str(text), "training.max_steps": 2, "training.threads": 1})
    assert pretrain(config, tmp_path / "ok", progress=False)["step"] == 2  # one batch a step: it trains
