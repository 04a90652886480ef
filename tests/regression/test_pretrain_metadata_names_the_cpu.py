"""Regression: a pretrained model's `hardware` metadata left the CPU unnamed.

It read `platform.processor()`, which is empty on Linux, so a model card could not
say what its CPU hours were spent on. It now names the CPU as `info` does
(`spacy_elmo.machine.cpu_name`)."""
from spacy_elmo.io import load_model
from spacy_elmo.machine import cpu_name
from spacy_elmo.pretrain import load_config, pretrain


def test_the_model_metadata_names_the_cpu(tiny_config_path, small_corpus, tmp_path):
    config = load_config(tiny_config_path, {"paths.train": str(small_corpus), "training.max_steps": 1,
                                            "training.eval_every": 1000, "training.threads": 1})
    pretrain(config, tmp_path / "run", progress=False)
    hardware = load_model(tmp_path / "run" / "model-last").metadata["hardware"]
    assert cpu_name() not in ("", "unknown") and cpu_name() in hardware
    assert hardware.split(",")[0].strip() != ""
