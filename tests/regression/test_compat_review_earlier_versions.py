"""Regression: what earlier versions wrote, read or continued by this one.

A review that wrote artifacts with four earlier commits and continued them with this one found
(each test below failed on the old code):
- `embed --resume` and `--join` added this version's vectors to a file or part set of an earlier
  version that records no model (the embedded English model itself changed since), and stamped
  the whole file with this run's record: a file of two models that names one;
- scripts/train.py trained over a finished run that has no training state (an earlier version's,
  or `spacy train`'s), without --overwrite: the finished model was lost without a word;
- `pretrain --resume` read the start model's provenance again, so `continued_from` described
  whatever was at that path now;
- scripts/pretrain.py trained a whole first pass before it refused OUTPUT's unfinished run of an
  earlier version;
- resuming a checkpoint of an earlier version warned "changed settings" for [training.distill]
  settings added since, at their defaults.
"""
import json
import shutil
import sys

import h5py
import pytest

from spacy_elmo.embedding.dump import DumpError, embed_file, join_shards, partial_path, shard_path
from spacy_elmo.io import load_model
from spacy_elmo.pretrain import Interrupted, load_config, pretrain
from spacy_elmo.pretrain.settings import check_resume_config
from spacy_elmo.resumable_training import ResumeError, finished_run_kept, record_settings
from tests.regression.test_train_script_exit_status_and_settings import SCRIPTS, _script

EARLIER = "written by an earlier version of spacy-elmo"


@pytest.fixture
def text(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("The cat sat .\n\nA second line\n", encoding="utf-8")
    return path


def _unrecorded(path):
    """`path` as an earlier version wrote it: no run record."""
    with h5py.File(path, "a") as f:
        del f.attrs["run"]


def test_embed_adds_nothing_to_a_file_that_records_no_model(allennlp_bilm, text, tmp_path):
    out = tmp_path / "out.hdf5"
    embed_file(allennlp_bilm, text, tmp_path / "whole.hdf5")
    shutil.copy(tmp_path / "whole.hdf5", partial_path(out))
    with h5py.File(partial_path(out), "a") as f:  # an earlier version's interrupted run: lines 0 and 1 written
        f.attrs["status"] = "incomplete"
        del f["2"]
    _unrecorded(partial_path(out))
    with pytest.raises(DumpError, match=f"{EARLIER}.*--overwrite"):
        embed_file(allennlp_bilm, text, out, resume=True)
    embed_file(allennlp_bilm, text, out, overwrite=True)  # the way on
    with h5py.File(out, "r") as f:
        assert "model" in json.loads(f.attrs["run"])

    for k in range(2):  # shards of two versions
        embed_file(allennlp_bilm, text, out, shard=(k, 2))
    _unrecorded(shard_path(out, 1, 2))
    with pytest.raises(DumpError, match="cannot join: .*shard-1-of-2 was written by an earlier version"):
        join_shards(out, 2, overwrite=True)
    _unrecorded(shard_path(out, 0, 2))  # both of one earlier version: joined, as before
    join_shards(out, 2, overwrite=True)


def test_embed_resumes_no_parquet_part_that_records_no_run(allennlp_bilm, text, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    from spacy_elmo.embedding.parquet import RUN_KEY

    out = embed_file(allennlp_bilm, text, tmp_path / "pq", output_format="parquet", chunk_lines=2)
    parts = sorted(tmp_path.joinpath("pq").glob("part-*.parquet"))
    assert len(parts) == 2
    table = pq.read_table(parts[0])
    metadata = {k: v for k, v in table.schema.metadata.items() if k != RUN_KEY}
    pq.write_table(table.replace_schema_metadata(metadata), parts[0])  # an earlier version's part
    parts[1].unlink()  # the run was stopped before its second part
    with pytest.raises(DumpError, match=EARLIER):
        embed_file(allennlp_bilm, text, out, output_format="parquet", chunk_lines=2, resume=True)


def test_training_refuses_to_replace_a_run_without_a_training_state(tmp_path):
    output = tmp_path / "run"
    (output / "model-best").mkdir(parents=True)  # `spacy train`'s output, or an earlier version's run
    (output / "model-best" / "config.cfg").write_text("[nlp]\n")
    with pytest.raises(ResumeError, match="holds model-best without a training state.*--overwrite"):
        finished_run_kept(output, {"seed": 0})
    assert finished_run_kept(output, {"seed": 0}, overwrite=True) is None
    assert finished_run_kept(tmp_path / "empty", {"seed": 0}) is None
    # this version's run, killed after its first model-best but before its first model-last: its settings
    # were recorded first, and a fresh start replaces it, as before
    record_settings(output, {"seed": 0})
    assert finished_run_kept(output, {"seed": 0}) is None


def test_a_resumed_pretraining_keeps_the_provenance_it_started_with(tiny_config_path, small_corpus, tmp_path, inject):
    settings = {"paths.train": str(small_corpus), "training.eval_every": 1000, "training.threads": 1}
    pretrain(load_config(tiny_config_path, {**settings, "training.max_steps": 2}), tmp_path / "first", progress=False)
    start = tmp_path / "start"
    shutil.copytree(tmp_path / "first" / "model-last", start)
    recorded = load_model(start).metadata["tokens_seen"]
    config = load_config(tiny_config_path, {**settings, "training.max_steps": 4, "paths.init_from": str(start)})
    inject("pretrain.step:1:int")
    with pytest.raises(Interrupted):
        pretrain(config, tmp_path / "run", progress=False)
    inject("")
    shutil.rmtree(start)  # another model at the start model's path by the time the run resumes
    pretrain(load_config(tiny_config_path, {**settings, "training.max_steps": 6}), tmp_path / "second", progress=False)
    shutil.copytree(tmp_path / "second" / "model-last", start)
    assert load_model(start).metadata["tokens_seen"] != recorded
    pretrain(config, tmp_path / "run", resume=True, progress=False)
    assert load_model(tmp_path / "run" / "model-last").metadata["continued_from"]["tokens_seen"] == recorded


def test_the_pretrain_script_checks_the_second_pass_before_the_first(monkeypatch, tmp_path):
    output = tmp_path / "pt"
    output.mkdir()
    (output / "checkpoint.pt").write_bytes(b"an earlier version's unfinished one-pass run")
    monkeypatch.syspath_prepend(str(SCRIPTS))
    script = _script("pretrain")
    calls = []
    monkeypatch.setattr(script, "word_table", lambda *args: calls.append("table"))
    monkeypatch.setattr(script, "run_pretrain", lambda *args: calls.append("pretrain"))
    (tmp_path / "t.txt").write_text("a b c\n", encoding="utf-8")
    monkeypatch.setattr(sys, "argv", ["pretrain.py", "--elmo-model", "pretrained", "--train", str(tmp_path / "t.txt"),
                                      "--dev", str(tmp_path / "t.txt"), "--output", str(output), "--record",
                                      str(tmp_path / "record.json")])
    with pytest.raises(SystemExit) as refused:
        script.main()
    assert "records no settings (a run of an earlier version)" in str(refused.value.code)
    assert "--overwrite" in str(refused.value.code) and calls == []


def test_distill_settings_added_since_at_their_defaults_are_no_change(tmp_path, capsys):
    config = load_config()
    saved = load_config()
    del saved["training"]["distill"]["similarity_bank"]  # a checkpoint from before the setting existed
    check_resume_config(config, saved.to_str(), tmp_path / "checkpoint.pt", report=True)
    assert "changed settings" not in capsys.readouterr().out
    changed = load_config(None, {"training.distill.weight": 0.5})
    check_resume_config(changed, saved.to_str(), tmp_path / "checkpoint.pt", report=True)
    assert "[training.distill] weight:" in capsys.readouterr().out
