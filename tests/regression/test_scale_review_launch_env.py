"""Regression: WORLD_SIZE set without RANK (a launcher of one's own, a leftover variable) was a raw
`KeyError: 'RANK'` traceback, in `embed` and in `pretrain`. Under several processes RANK is now
required (LOCAL_RANK too where it picks the GPU), and a missing or malformed one is one line.
"""
import pytest
import torch

from spacy_elmo.pretrain import distributed
from spacy_elmo.pretrain.distributed import init_distributed

from ..cli.invoke import refused
from ..pretrain.runs import _overrides


@pytest.fixture
def two_without_rank(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    for name in ("RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(distributed.dist, "init_process_group", lambda *a, **k: pytest.fail("joined a group"))
    monkeypatch.setattr(distributed.dist, "is_initialized", lambda: False)


@pytest.mark.usefixtures("two_without_rank")
def test_embed_says_rank_is_missing(allennlp_dir, tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("The cat sat .\n", encoding="utf-8")
    refused(["embed", text, tmp_path / "out.hdf5", "-w", allennlp_dir, "-q"], "WORLD_SIZE=2 is set but RANK is not")
    assert not list(tmp_path.glob("out.hdf5*"))


@pytest.mark.usefixtures("two_without_rank")
def test_pretrain_says_rank_is_missing(tiny_config_path, small_corpus, tmp_path):
    args = ["pretrain", tiny_config_path, tmp_path / "run"]
    for key, value in _overrides([small_corpus]).items():
        args += [f"--{key}", value if not isinstance(value, list) else value[0]]
    refused(args, "WORLD_SIZE=2 is set but RANK is not", "torchrun sets")


def test_the_launch_variables_are_checked(monkeypatch):
    monkeypatch.setattr(distributed.dist, "init_process_group", lambda *a, **k: None)
    monkeypatch.setattr(distributed.dist, "is_initialized", lambda: False)
    monkeypatch.setattr(distributed.dist, "new_group", lambda **kwargs: None)
    monkeypatch.setenv("WORLD_SIZE", "2")
    for rank, expected in (("2", "RANK=2 is not a rank of WORLD_SIZE=2"), ("x", "RANK='x' is not a whole number")):
        monkeypatch.setenv("RANK", rank)
        with pytest.raises(distributed.LaunchError, match=expected):
            init_distributed("cpu")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert init_distributed("cpu").rank == 1  # on the CPU LOCAL_RANK picks nothing
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    with pytest.raises(distributed.LaunchError, match="LOCAL_RANK, which picks each process's GPU"):
        init_distributed("cuda")
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(distributed.LaunchError, match="WORLD_SIZE='two' is not a whole number"):
        init_distributed("cpu")
