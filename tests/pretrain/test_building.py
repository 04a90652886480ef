"""`[training] precision` on a CPU: bfloat16 autocast where the CPU computes bfloat16 natively,
float32 with a warning where it would be emulated (35-230x slower on an AVX2 CPU)."""
import json
import math

import pytest
import torch

from spacy_elmo.pretrain import building, load_config, pretrain

CPU = torch.device("cpu")


def _product_dtype() -> torch.dtype:
    return (torch.ones(2, 2) @ torch.ones(2, 2)).dtype


def test_float32_runs_without_autocast_or_warning(capsys):
    with building.training_autocast("float32", CPU):
        assert _product_dtype() == torch.float32
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("precision", ["bfloat16", "float16"])
def test_without_native_bfloat16_warns_and_trains_in_float32(monkeypatch, capsys, precision):
    monkeypatch.setattr(building, "native_cpu_bfloat16", lambda: False)
    with building.training_autocast(precision, CPU):
        assert _product_dtype() == torch.float32
    out = capsys.readouterr().out
    assert f"precision = '{precision}'" in out and "float32" in out


def test_float16_is_never_used_on_a_cpu(monkeypatch, capsys):
    monkeypatch.setattr(building, "native_cpu_bfloat16", lambda: True)
    with building.training_autocast("float16", CPU):
        assert _product_dtype() == torch.float32
    assert "float16" in capsys.readouterr().out


def test_native_bfloat16_cpu_trains_under_autocast(monkeypatch, tiny_config_path, small_corpus, tmp_path, capsys):
    """Where the CPU computes bfloat16 (forced here: this test's machine may emulate it), the run's
    products are bfloat16, its weights stay float32, and it trains: the loss is finite."""
    monkeypatch.setattr(building, "native_cpu_bfloat16", lambda: True)
    with building.training_autocast("bfloat16", CPU):
        assert _product_dtype() == torch.bfloat16
    weights = {}
    for precision in ("float32", "bfloat16"):
        config = load_config(tiny_config_path, {"paths.train": str(small_corpus), "training.precision": precision,
                                                "training.max_steps": 3, "training.eval_every": 100,
                                                "softmax.kind": "sampled", "softmax.n_samples": 64})
        assert pretrain(config, tmp_path / precision, progress=False)["step"] == 3
        assert "precision" not in capsys.readouterr().out  # no warning: bfloat16 was used
        state = torch.load(tmp_path / precision / "checkpoint.pt", weights_only=True)
        weights[precision] = {k: t for k, t in state["model"].items() if t.is_floating_point()}
        assert all(t.dtype == torch.float32 for t in weights[precision].values())
        log = (tmp_path / precision / "log.jsonl").read_text().splitlines()
        assert log and math.isfinite(json.loads(log[-1])["train_loss"])
    # same seed and batches: only the products' precision differs, and it shows in the weights
    assert any(not torch.equal(t, weights["bfloat16"][k]) for k, t in weights["float32"].items())


def test_native_bfloat16_check_answers_on_any_build():
    assert isinstance(building.native_cpu_bfloat16(), bool)
