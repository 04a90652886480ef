"""Regression: a run started with --init-from and then resumed saved models without
`continued_from`, so the tokens and hours of the model it started from were lost
from the record (bench_bilm.py sums them)."""
from spacy_elmo.io import load_model
from spacy_elmo.pretrain import load_config, pretrain


def test_resumed_run_keeps_the_start_models_provenance(tiny_config_path, small_corpus, tmp_path):
    base = {"paths.train": str(small_corpus), "training.eval_every": 1000, "training.checkpoint_every": 1000}
    pretrain(load_config(tiny_config_path, {**base, "training.max_steps": 4}), tmp_path / "first", progress=False)
    start = str(tmp_path / "first" / "model-last")
    continued = {**base, "paths.init_from": start}
    pretrain(load_config(tiny_config_path, {**continued, "training.max_steps": 2}), tmp_path / "run", progress=False)
    pretrain(load_config(tiny_config_path, {**continued, "training.max_steps": 4}), tmp_path / "run", resume=True,
             progress=False)
    meta = load_model(tmp_path / "run" / "model-last").metadata
    assert meta["step"] == 4
    assert meta["init_from"] == start
    assert meta["continued_from"]["tokens_seen"] == load_model(start).metadata["tokens_seen"] > 0
