"""Regression: resuming a run that had reached max_steps trained one step more.

The step limit was checked only after a step, so `--resume` on a finished run (as
scripts/pretrain.py does when its output has a checkpoint) stepped once before
stopping: step max_steps + 1, and weights an uninterrupted run never had. The limit is
now checked before the first step too."""
import torch

from spacy_elmo.pretrain import load_config, pretrain


def test_resuming_a_finished_run_trains_no_step(tiny_config_path, small_corpus, tmp_path):
    config = load_config(tiny_config_path, {"paths.train": str(small_corpus), "training.max_steps": 3,
                                            "training.eval_every": 1000, "training.threads": 1})
    assert pretrain(config, tmp_path / "run", progress=False)["step"] == 3
    before = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=True)
    result = pretrain(config, tmp_path / "run", resume=True, progress=False)
    after = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=True)
    assert result["step"] == after["progress"]["step"] == 3
    assert after["progress"]["tokens"] == before["progress"]["tokens"]
    for name, tensor in before["model"].items():
        torch.testing.assert_close(after["model"][name], tensor, rtol=0, atol=0, msg=name)
