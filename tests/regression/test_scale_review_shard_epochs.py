"""Regression: sharded pretraining (`[corpus] shard = "files"`, the torchrun default) skipped the same
text in every epoch.

An epoch ends when the first process runs out of batches, and each process read its shares in share
order, every epoch alike: with 3 files of similar sizes and 2 processes (deal [0, 1, 0]) process 1 ran
dry after its one file while process 0 had read file 0, so file 2 was never trained on, in any epoch
(checkpoint `taken: [9, 9, 0]`). A process now starts epoch e at its (e mod k)-th of its k shares, so
the share cut off changes from epoch to epoch, and a resumed run still reads what an uninterrupted one
would. With fewer files than processes the files are cut into as many parts as give every process the
same number of shares.
"""
from pathlib import Path
from typing import Any, List

import torch

from spacy_elmo.pretrain import Trainer, load_config
from spacy_elmo.pretrain.checkpoint import load_checkpoint
from spacy_elmo.pretrain.distributed import Dist
from spacy_elmo.pretrain.shards import ShardedCorpus, Share, plan_shares

from ..pretrain.runs import _overrides
from ..pretrain.test_shards import four_files  # noqa: F401 (a fixture)


def _processes(n_files: int, world: int) -> List[ShardedCorpus]:
    """One ShardedCorpus per simulated process (no process group: dealing and reading need none);
    a share's "corpus" is the Share itself."""
    files = [Path(f"f{i}.txt") for i in range(n_files)]
    shares = plan_shares(n_files, world)
    prepare: Any = lambda path, share: share  # noqa: E731
    return [ShardedCorpus(files, shares, prepare, Dist(rank=r, world_size=world)) for r in range(world)]


def _train_epoch(processes: List[ShardedCorpus], epoch: int, sizes: List[int]) -> List[int]:
    """The trainer's loop over one epoch: a step takes one batch per process and the epoch ends when
    any process runs dry. Returns the batches taken from each share."""
    make: Any = lambda corpus, share: iter(range(sizes[share]))  # noqa: E731
    streams = [p.batches(make, epoch) for p in processes]
    while True:
        taken = [next(stream, None) for stream in streams]
        if any(t is None for t in taken):
            break
        for process, item in zip(processes, taken):
            assert item is not None
            process.took(item[0])
    owner = processes[0].owner
    result = [processes[owner[s]].taken[s] for s in range(len(sizes))]
    for process in processes:
        process.new_epoch()
    return result


def test_three_similar_files_on_two_processes_are_all_trained_on():
    processes = _processes(3, 2)
    assert processes[0].owner == [0, 1, 0]
    epochs = [_train_epoch(processes, epoch, [9, 9, 9]) for epoch in range(4)]
    assert epochs[0] == [9, 9, 0]  # process 1 runs dry after its file: the epoch ends
    assert epochs[1] == [0, 9, 9]  # the next epoch starts process 0 at file 2: file 0 is cut off instead
    assert epochs[2] == epochs[0] and epochs[3] == epochs[1]


def test_what_is_cut_off_changes_with_unequal_shares():
    processes = _processes(5, 2)  # process 0: shares 0, 2, 4; process 1: shares 1, 3
    sizes = [5, 4, 5, 4, 5]  # process 1 runs dry after 8 steps, process 0 inside its second share
    assert _train_epoch(processes, 0, sizes) == [5, 4, 3, 4, 0]
    seen = [0] * 5
    for epoch in range(1, 3):
        for share, taken in enumerate(_train_epoch(processes, epoch, sizes)):
            seen[share] += taken
    assert all(seen), seen


def test_fewer_files_than_processes_give_every_process_as_many_shares():
    for n_files, world in ((1, 2), (2, 4), (3, 4), (2, 3), (3, 8)):
        shares = plan_shares(n_files, world)
        assert len(shares) % world == 0, (n_files, world)
        assert sorted({s.parts for s in shares}) == [len(shares) // n_files]
    assert plan_shares(3, 4)[:4] == [Share(0, 0, 4), Share(0, 1, 4), Share(0, 2, 4), Share(0, 3, 4)]


def test_the_trainer_starts_each_epoch_at_another_share_and_resumes_exactly(
    tiny_config_path, four_files, tmp_path  # noqa: F811 (four_files: a fixture)
):
    """One process, four shares: epoch 1 reads share 1 first; stopped there and resumed, the weights of
    an uninterrupted run."""
    files = four_files
    common = {"corpus.shard": "files", "model.dropout": 0.1}

    def train(out, **extra):
        config = load_config(tiny_config_path, _overrides(files, **common, **extra))
        return Trainer(config, tmp_path / out, device="cpu", progress=False)

    first_epoch = train("one", **{"training.max_epochs": 1}).run()["step"]
    full = train("full", **{"training.max_epochs": 3}).run()
    stop = first_epoch + 1
    train("resumed", **{"training.max_epochs": 3, "training.max_steps": stop}).run()
    progress = load_checkpoint(tmp_path / "resumed" / "checkpoint.pt")["progress"]
    assert progress["epoch"] == 1 and progress["step"] == stop
    assert progress["shards"]["taken"] == [0, 1, 0, 0]  # epoch 1 starts at share 1
    train("resumed", **{"training.max_epochs": 3}).run(resume=True)
    a, b = (load_checkpoint(tmp_path / d / "checkpoint.pt") for d in ("full", "resumed"))
    assert a["progress"]["step"] == b["progress"]["step"] == full["step"]
    for name in a["model"]:
        torch.testing.assert_close(a["model"][name], b["model"][name], rtol=0, atol=0)
