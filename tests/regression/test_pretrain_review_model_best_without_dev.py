"""Regression: without a dev set, extending a finished run left model-best behind.

Without [paths] dev, model-best is documented to equal model-last at the end, but `_finish`
wrote it only when it did not exist yet: a finished run resumed with a larger max_steps
(or max_epochs) kept the first session's model-best. Without dev segments model-best is now
rewritten at every finish, so it is model-last."""
from safetensors.torch import load_file

from spacy_elmo.io import load_model
from spacy_elmo.pretrain import load_config, pretrain


def test_an_extended_run_without_dev_ends_with_model_best_equal_to_model_last(tiny_config_path, small_corpus,
                                                                              tmp_path):
    def config(max_steps):
        return load_config(tiny_config_path, {"paths.train": str(small_corpus), "training.max_steps": max_steps,
                                              "training.eval_every": 2, "training.threads": 1})

    run = tmp_path / "run"
    assert pretrain(config(3), run, progress=False)["step"] == 3
    assert load_model(run / "model-best").metadata["step"] == 3
    assert pretrain(config(5), run, resume=True, progress=False)["step"] == 5
    best, last = load_model(run / "model-best").metadata, load_model(run / "model-last").metadata
    assert best["step"] == last["step"] == 5 and best["finished"] is True
    a, b = load_file(run / "model-best" / "bilm.safetensors"), load_file(run / "model-last" / "bilm.safetensors")
    assert a.keys() == b.keys() and all(a[k].equal(b[k]) for k in a)
