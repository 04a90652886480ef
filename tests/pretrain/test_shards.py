"""Corpus shares per process (spacy_elmo/pretrain/shards.py): disjoint shares and one vocabulary, resuming at
another number of processes (two gloo processes started by torch.multiprocessing)."""
import json
import os
import socket
import weakref
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from spacy_elmo.bilm.vocab import Vocabulary
from spacy_elmo.pretrain import TokenizedCorpus, Trainer, load_config
from spacy_elmo.pretrain.checkpoint import load_checkpoint
from spacy_elmo.pretrain.shards import ShardedCorpus, plan_shares

from .runs import _overrides, _trainer


@pytest.fixture
def four_files(small_corpus, tmp_path):
    """small_corpus cut into four files of 30 lines."""
    lines = small_corpus.read_text(encoding="utf-8").splitlines(keepends=True)
    files = []
    for i in range(4):
        path = tmp_path / "text" / f"part{i}.txt"
        path.parent.mkdir(exist_ok=True)
        path.write_text("".join(lines[i * 30 : (i + 1) * 30]), encoding="utf-8")
        files.append(path)
    return files


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _rank_main(rank, world, port, config_path, overrides, out_dir, report_dir, resume):
    """One process of a gloo run: records the text files it opened, its vocabulary and result."""
    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(rank),
                       "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world), "OMP_NUM_THREADS": "1"})
    torch.set_num_threads(1)
    from spacy_elmo.pretrain import text_corpus

    opened = []
    real = text_corpus.open_text

    def recording(path):
        if Path(path).name.startswith("part"):  # the corpus's files, not the tokenized cache's own
            opened.append(Path(path).name)
        return real(path)

    text_corpus.open_text = recording
    trainer = Trainer(load_config(config_path, overrides), out_dir, device="cpu", progress=False)
    group = weakref.ref(dist.group.WORLD)
    result = trainer.run(resume=resume)
    report = {"opened": sorted(opened), "vocab": trainer.vocab.words, "step": result["step"],
              "tokens": result["tokens"], "checksums": result["replica_checksums"],
              "group_released": group() is None}
    Path(report_dir, f"rank{rank}.json").write_text(json.dumps(report))


def _run(world, config_path, overrides, out_dir, tmp_path, resume=False):
    report_dir = tmp_path / f"reports-{world}-{int(resume)}"
    report_dir.mkdir()
    args = (world, _free_port(), str(config_path), overrides, str(out_dir), str(report_dir), resume)
    if world == 1:
        os.environ.pop("WORLD_SIZE", None)
        _rank_main_single(*args)
    else:
        mp.spawn(_rank_main, args=args, nprocs=world, join=True)
    return [json.loads((report_dir / f"rank{r}.json").read_text()) for r in range(world)]


def _rank_main_single(world, port, config_path, overrides, out_dir, report_dir, resume):
    trainer = Trainer(load_config(config_path, overrides), out_dir, device="cpu", progress=False)
    result = trainer.run(resume=resume)
    report = {"opened": [], "vocab": trainer.vocab.words, "step": result["step"], "tokens": result["tokens"],
              "checksums": None}
    Path(report_dir, "rank0.json").write_text(json.dumps(report))


def _whole_vocab(files, tmp_path):
    counts = TokenizedCorpus.prepare(files, tmp_path / "whole-cache", progress=False).counts()
    return Vocabulary.from_counts(counts, 5000, 1).words


def _share_targets(files, world, tmp_path):
    """Per share: its batches in epoch 0 (as the trainer makes them) and forward targets."""
    shares = plan_shares(len(files), world)
    out = []
    for share in shares:
        corpus = TokenizedCorpus.prepare([files[share.file]], tmp_path / "share-cache", progress=False,
                                         part=share.part, parts=share.parts)
        out.append((corpus.n_tokens + corpus.n_segments, corpus))
    return out


def test_two_processes_read_disjoint_shares_and_share_one_vocabulary(tiny_config_path, four_files, tmp_path):
    """Also accumulation under DDP: 2 micro-batches per step (no_sync on the first), replicas equal."""
    extra = {"training.max_steps": 2, "training.accumulate_steps": 2}
    reports = _run(2, tiny_config_path, _overrides(four_files, **extra), tmp_path / "run", tmp_path)
    assert reports[0]["opened"] == ["part0.txt", "part2.txt"]
    assert reports[1]["opened"] == ["part1.txt", "part3.txt"]
    assert reports[0]["vocab"] == reports[1]["vocab"] == _whole_vocab(four_files, tmp_path)
    assert reports[0]["step"] == reports[1]["step"] == 2
    assert reports[0]["checksums"][0] == reports[0]["checksums"][1]
    shards = load_checkpoint(tmp_path / "run" / "checkpoint.pt")["progress"]["shards"]
    assert shards["owner"] == [0, 1, 0, 1] and shards["world_size"] == 2
    assert shards["taken"][0] + shards["taken"][2] == 4 and shards["taken"][1] + shards["taken"][3] == 4


def test_fewer_files_than_processes_split_by_lines(tiny_config_path, small_corpus, tmp_path):
    assert [s.to_list() for s in plan_shares(1, 2)] == [[0, 0, 2], [0, 1, 2]]
    assert [s.to_list() for s in plan_shares(3, 2)] == [[0, 0, 1], [1, 0, 1], [2, 0, 1]]
    halves = [TokenizedCorpus.prepare([small_corpus], tmp_path / "c", progress=False, part=p, parts=2)
              for p in (0, 1)]
    whole = TokenizedCorpus.prepare([small_corpus], tmp_path / "c", progress=False)
    assert halves[0].counts() + halves[1].counts() == whole.counts()
    lines = [line for line in small_corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert halves[0].n_segments >= len(lines[0::2]) and halves[1].n_segments >= len(lines[1::2])


def test_resume_two_processes_on_one(tiny_config_path, four_files, tmp_path):
    """2 processes take 2 steps (4 batches); 1 process finishes the epoch: every batch of
    every share is trained on once, so the tokens are the corpus' forward targets."""
    run = tmp_path / "run"
    _run(2, tiny_config_path, _overrides(four_files, **{"training.max_steps": 2}), run, tmp_path)
    [report] = _run(1, tiny_config_path, _overrides(four_files, **{"training.max_steps": 0}), run, tmp_path,
                    resume=True)
    shares = _share_targets(four_files, 2, tmp_path)
    n_batches = _count_share_batches(tiny_config_path, four_files, tmp_path)
    assert report["step"] == 2 + sum(n_batches) - 4
    assert report["tokens"] == sum(targets for targets, _ in shares)
    state = load_checkpoint(run / "checkpoint.pt")
    assert state["progress"]["epoch"] == 1 and state["progress"]["step"] == report["step"]


def test_resume_one_process_on_two(tiny_config_path, four_files, tmp_path):
    """1 process ([corpus] shard = "files") takes 3 batches of share 0; 2 processes deal the
    unfinished shares between them and take 2 steps: 7 batches taken in all."""
    run = tmp_path / "run"
    common = {"corpus.shard": "files"}
    _run(1, tiny_config_path, _overrides(four_files, **common, **{"training.max_steps": 3}), run, tmp_path)
    first = load_checkpoint(run / "checkpoint.pt")["progress"]["shards"]
    assert first["world_size"] == 1 and sum(first["taken"]) == 3
    reports = _run(2, tiny_config_path, _overrides(four_files, **common, **{"training.max_steps": 5}), run,
                   tmp_path, resume=True)
    assert reports[0]["step"] == reports[1]["step"] == 5
    assert reports[0]["vocab"] == reports[1]["vocab"] == _whole_vocab(four_files, tmp_path)
    shards = load_checkpoint(run / "checkpoint.pt")["progress"]["shards"]
    assert shards["world_size"] == 2 and sum(shards["taken"]) == 3 + 2 * 2
    unfinished = [s for s in range(4) if not first["done"][s]]
    assert [shards["owner"][s] for s in unfinished] == [i % 2 for i in range(len(unfinished))]


def test_sharded_resume_in_one_process_is_exact(tiny_config_path, four_files, tmp_path):
    """[corpus] shard = "files" in one process: stopped inside a share, resumed, the same weights."""
    common = {"corpus.shard": "files", "training.max_epochs": 2, "model.dropout": 0.1}
    full = Trainer(load_config(tiny_config_path, _overrides(four_files, **common)), tmp_path / "full",
                   progress=False).run()
    assert full["step"] >= 6
    Trainer(load_config(tiny_config_path, _overrides(four_files, **common, **{"training.max_steps": 3})),
            tmp_path / "resumed", progress=False).run()
    taken = load_checkpoint(tmp_path / "resumed" / "checkpoint.pt")["progress"]["shards"]["taken"]
    assert sum(taken) == 3
    Trainer(load_config(tiny_config_path, _overrides(four_files, **common)), tmp_path / "resumed",
            progress=False).run(resume=True)
    a, b = (load_checkpoint(tmp_path / d / "checkpoint.pt") for d in ("full", "resumed"))
    assert a["progress"]["step"] == b["progress"]["step"] == full["step"]
    for name in a["model"]:
        torch.testing.assert_close(a["model"][name], b["model"][name], rtol=0, atol=0)


def _count_share_batches(config_path, files, tmp_path):
    trainer = _trainer(config_path, files, tmp_path / "count", **{"corpus.shard": "files"})
    assert isinstance(trainer.sharded, ShardedCorpus)
    return [sum(1 for _ in trainer.share_batches(trainer.sharded.corpus(s), s, 0))
            for s in range(len(trainer.sharded.shares))]
