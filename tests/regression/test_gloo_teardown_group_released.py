"""Regression: a finished two-process (gloo) pretraining run could abort at exit with SIGABRT
("terminate called without an active exception"), rarely, after writing every output
(tests/pretrain/test_shards.py::test_resume_one_process_on_two failed so in one CI run of five).

The trainer called `destroy_process_group`, but the group lived on: torch.distributed.nn, imported
by DistributedDataParallel after the group existed, had bound it as its functions' default
argument, and the trainer's DistributedDataParallel wrapper held it too. So gloo's worker threads
were torn down during interpreter shutdown, where a thread still releasing a collective's tensor
needs the interpreter lock and is ended by force, which aborts the process. Now the group is
joined with torch.distributed.nn imported first (`distributed.join_process_group`) and the trainer
drops its wrapper before leaving (`Trainer._leave_group`): the group is gone when `run` returns,
in every process, which this test checks (a weak reference to it is dead)."""
from tests.pretrain.runs import _overrides
from tests.pretrain.test_shards import _run


def test_each_process_group_is_destroyed_when_run_returns(tiny_config_path, small_corpus, tmp_path):
    extra = {"corpus.shard": "none", "training.max_steps": 2}
    reports = _run(2, tiny_config_path, _overrides([small_corpus], **extra), tmp_path / "ddp", tmp_path)
    assert [r["step"] for r in reports] == [2, 2]
    assert [r["group_released"] for r in reports] == [True, True]
