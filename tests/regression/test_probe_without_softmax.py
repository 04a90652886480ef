"""Regression: bench_bilm.py's probes loaded the training softmax too, so a model
kept without its softmax file (snapshots trimmed to save disk) could not be
probed at all ("softmax.safetensors: missing"). Only perplexity needs it now;
a probe of such a model works, and perplexity still says what is missing."""
import sys
from pathlib import Path

import pytest

from spacy_elmo.io.errors import WeightsError
from spacy_elmo.pretrain import load_config, pretrain

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_bilm  # noqa: E402


def test_sense_probe_of_a_model_without_its_softmax_file(tiny_config_path, small_corpus, tmp_path):
    config = {"paths.train": str(small_corpus), "training.max_steps": 2, "training.eval_every": 1000}
    pretrain(load_config(tiny_config_path, config), tmp_path / "run", progress=False)
    model = tmp_path / "run" / "model-last"
    (model / "softmax.safetensors").unlink()
    row = bench_bilm.evaluate(str(model), ["sense"])
    assert len(row["sense"]) == 3 and all(0.0 <= s <= 1.0 for s in row["sense"])
    with pytest.raises(WeightsError, match="softmax.safetensors: missing"):
        bench_bilm.evaluate(str(model), ["ppl"])
