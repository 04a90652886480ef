"""Regression: resuming a data-parallel run that had finished logged its replicas' checksums again.

A finished run resumed (as `spacy project run` or a scheduler may do) takes no step, but
`_finish` ran `check_replicas` once more, which appended a second `replica_checksums` row for
the same weights to log.jsonl. The row now names its step (`at_step`), and a finish at a step
that has its row already adds none.
"""
import json

from ..pretrain.runs import _overrides
from ..pretrain.test_shards import _run, four_files  # noqa: F401 (four_files: a fixture)


def _replica_rows(run):
    rows = [json.loads(line) for line in (run / "log.jsonl").read_text(encoding="utf-8").splitlines()]
    return [row for row in rows if "replica_checksums" in row]


def test_a_finished_run_resumed_adds_no_second_checksum_row(tiny_config_path, four_files, tmp_path):  # noqa: F811
    run = tmp_path / "run"
    overrides = _overrides(four_files, **{"training.max_steps": 2})
    first = _run(2, tiny_config_path, overrides, run, tmp_path)
    [row] = _replica_rows(run)
    assert row["at_step"] == 2 and row["replica_checksums"] == first[0]["checksums"]
    again = _run(2, tiny_config_path, overrides, run, tmp_path, resume=True)
    assert again[0]["step"] == 2 and again[0]["checksums"] == first[0]["checksums"]
    assert _replica_rows(run) == [row]
