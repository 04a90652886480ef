"""Regression: a GPU run did not resume exactly.

The checkpoint held torch's CPU generator alone (`torch.get_rng_state()`), not the
training GPU's, which draws the dropout masks there, and not the float16 gradient
scaler's state, so a resumed run restarted the loss scale from its initial value. Both
are saved now where they exist, and a checkpoint without them (written on a CPU, or
before they were saved) still resumes; a GPU checkpoint resumes on a CPU. Checked on a
CPU: the CUDA calls are stood in for, and the scaler is a CPU GradScaler."""
import pytest
import torch

from spacy_elmo.bilm.language_model import sentence_batch
from spacy_elmo.pretrain import load_config, pretrain
from spacy_elmo.pretrain.checkpoint import load_checkpoint, rng_state, save_checkpoint, set_rng_state

from tests.pretrain.runs import _trainer

GPU = torch.device("cuda:0")
GPU_STATE = torch.arange(16, dtype=torch.uint8)


@pytest.fixture
def fake_cuda(monkeypatch):
    """torch.cuda's generator calls, recorded; the GPU's state is GPU_STATE."""
    calls = []

    def get_rng_state(device="cuda"):
        calls.append(("get", device))
        return GPU_STATE.clone()

    def set_rng_state(state, device="cuda"):
        calls.append(("set", device, state))

    monkeypatch.setattr(torch.cuda, "get_rng_state", get_rng_state)
    monkeypatch.setattr(torch.cuda, "set_rng_state", set_rng_state)
    return calls


@pytest.fixture
def run_dir(tiny_config_path, small_corpus, tmp_path):
    config = load_config(tiny_config_path, {"paths.train": str(small_corpus), "training.max_steps": 2,
                                            "training.eval_every": 1000, "training.threads": 1})
    pretrain(config, tmp_path / "run", progress=False)
    return tmp_path / "run"


def test_the_training_gpus_generator_is_saved_and_restored(fake_cuda, run_dir, tmp_path):
    state = load_checkpoint(run_dir / "checkpoint.pt")
    assert "cuda" not in state["rng"] and "scaler" not in state  # a CPU run saves neither
    assert "cuda" not in rng_state(torch.device("cpu")) and fake_cuda == []
    state["rng"] = rng_state(GPU)
    assert fake_cuda == [("get", GPU)]  # that device's alone
    state["scaler"] = {"scale": 512.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000,
                       "_growth_tracker": 7}
    save_checkpoint(tmp_path / "gpu.pt", state)  # the layout check accepts both
    loaded = load_checkpoint(tmp_path / "gpu.pt")
    assert torch.equal(loaded["rng"]["cuda"], GPU_STATE) and loaded["scaler"] == state["scaler"]
    set_rng_state(loaded["rng"], torch.device("cpu"))  # resumed on a CPU: the GPU's state is not needed
    assert fake_cuda == [("get", GPU)]
    set_rng_state(loaded["rng"], GPU)
    assert fake_cuda[-1][:2] == ("set", GPU) and torch.equal(fake_cuda[-1][2], GPU_STATE)


def test_a_gpu_checkpoint_and_an_old_one_resume(fake_cuda, tiny_config_path, small_corpus, run_dir):
    config = load_config(tiny_config_path, {"paths.train": str(small_corpus), "training.max_steps": 3,
                                            "training.eval_every": 1000, "training.threads": 1})
    state = load_checkpoint(run_dir / "checkpoint.pt")
    state["rng"]["cuda"] = GPU_STATE.clone()
    state["scaler"] = {"scale": 512.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000,
                       "_growth_tracker": 7}
    save_checkpoint(run_dir / "checkpoint.pt", state)
    assert pretrain(config, run_dir, resume=True, progress=False)["step"] == 3  # on a CPU: both ignored
    # an old checkpoint, without either field (as every CPU checkpoint is)
    state = load_checkpoint(run_dir / "checkpoint.pt")
    assert "cuda" not in state["rng"] and "scaler" not in state
    more = load_config(tiny_config_path, {"paths.train": str(small_corpus), "training.max_steps": 4,
                                          "training.eval_every": 1000, "training.threads": 1})
    assert pretrain(more, run_dir, resume=True, progress=False)["step"] == 4


def test_the_gradient_scalers_state_goes_into_the_checkpoint_and_back(tiny_config_path, small_corpus, tmp_path):
    trainer = _trainer(tiny_config_path, [small_corpus], tmp_path / "a")
    trainer.scaler = torch.amp.GradScaler("cpu", init_scale=256.0, growth_interval=1)  # as float16 on a GPU
    sentences = [s for _, s in zip(range(12), trainer.train_corpus.segments())]
    trainer._step([sentence_batch(sentences, trainer.vocab)])
    expected = trainer.scaler.state_dict()
    assert expected["scale"] == 512.0  # it has moved from its start
    save_checkpoint(tmp_path / "checkpoint.pt", trainer._snapshot())
    state = load_checkpoint(tmp_path / "checkpoint.pt")
    assert state["scaler"] == expected

    resumed = _trainer(tiny_config_path, [small_corpus], tmp_path / "b")
    resumed.scaler = torch.amp.GradScaler("cpu", growth_interval=1)
    resumed._restore(state)
    assert resumed.scaler.state_dict() == expected
    # a checkpoint without it: a fresh scaler, no error
    fresh = _trainer(tiny_config_path, [small_corpus], tmp_path / "c")
    fresh.scaler = torch.amp.GradScaler("cpu", growth_interval=1)
    del state["scaler"]
    fresh._restore(state)
    assert fresh.scaler.state_dict()["scale"] == 2.0 ** 16
