"""Regression: under torchrun with [corpus] shard = "none", `tokens` was not the tokens trained on.

Each process trains on its own batches of the one batch sequence, but the step's token
count was the main process's batch times the number of processes (only the "files" layout
summed the processes' counts). Both layouts now sum them (all_reduce), so `tokens` in the
result, the checkpoint and log.jsonl is what the processes together trained on. Two gloo
processes on a CPU (torch.multiprocessing), as in tests/pretrain/test_shards.py."""
import torch

from tests.pretrain.runs import _overrides, _trainer
from tests.pretrain.test_shards import _run

STEPS = 3


def test_tokens_are_the_sum_of_every_process_batches(tiny_config_path, small_corpus, tmp_path):
    extra = {"corpus.shard": "none", "training.max_steps": STEPS, "training.batch_tokens": 256}
    reports = _run(2, tiny_config_path, _overrides([small_corpus], **extra), tmp_path / "ddp", tmp_path)
    assert [r["step"] for r in reports] == [STEPS, STEPS]

    # the one batch sequence: at each step process r trains on batch 2 * step + r
    single = _trainer(tiny_config_path, [small_corpus], tmp_path / "single", **extra)
    assert single.vocab.words == reports[0]["vocab"]
    batches = single.batches(0)
    taken = [next(batches) for _ in range(2 * STEPS)]
    expected = sum(int((torch.as_tensor(b.targets[0]) >= 0).sum()) for b in taken)  # forward targets
    main_only = sum(2 * int((torch.as_tensor(b.targets[0]) >= 0).sum()) for b in taken[::2])
    assert expected != main_only  # the two processes' batches differ in size: the test can tell
    assert [r["tokens"] for r in reports] == [expected, expected]
