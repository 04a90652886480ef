"""Regression: `embed` under torchrun (and `--shard K/N`) failed in ways found only after the work.

* A run stopped after one process had finished its shard could not be resumed: `--resume` refused
  that process's complete shard file ("exists (a finished run: there is nothing to resume)") and
  torchrun stopped the others. A complete shard with the run's settings now counts as done.
* The process group was created after the embedding with torch's default timeout (30 minutes), so
  a process that finished its shard more than 30 minutes before another crashed the run. It is now
  created with a timeout of days (`SHARD_WAIT`).
* A failed `--overwrite` rerun left the old OUTPUT, a join whose virtual datasets point into the
  shard files, "complete" while it read the new run's shard 0 under the old run's keys and index: one
  file mixing two runs. A shard's commit now removes such a join first.
* An existing OUTPUT (or OUTPUT.partial) was found only at the join, after every shard was embedded,
  and the join's error was a raw traceback. It is now refused before any work, and the join's errors
  are one line.
* An HDF5 output at a URL had its shards uploaded, then the join failed with a traceback. A sharded
  HDF5 output must now be local (refused up front).

The processes run in turn in this process, with torchrun's environment and the collectives replaced
by recorders (the barrier passes at once).
"""
import json
from datetime import timedelta

import h5py
import numpy
import pytest
import torch.distributed as dist

from spacy_elmo.cli import app
from spacy_elmo.embedding.dump import DumpError, DumpWarning, embed_file, join_shards, partial_path, shard_path

from ..cli.invoke import flat, refused, runner
from ..embedding.inputs_data import SIX_LINES as LINES
from ..embedding.inputs_data import write_text


@pytest.fixture
def text(tmp_path):
    return write_text(tmp_path / "in.txt", LINES)


@pytest.fixture
def torchrun(monkeypatch):
    """`as_rank(rank, *args)`: `embed *args` as process RANK of 2 under torchrun; `.calls`: the collectives."""
    calls = []
    monkeypatch.setattr(dist, "is_initialized", lambda: False)
    monkeypatch.setattr(dist, "init_process_group", lambda *a, **k: calls.append(("init", a, k)))
    monkeypatch.setattr(dist, "barrier", lambda *a, **k: calls.append(("barrier",)))
    monkeypatch.setattr(dist, "destroy_process_group", lambda *a, **k: calls.append(("destroy",)))

    def as_rank(rank, *args):
        for name, value in (("WORLD_SIZE", "2"), ("RANK", str(rank)), ("LOCAL_RANK", "0")):
            monkeypatch.setenv(name, value)
        return runner.invoke(app, ["embed", *[str(a) for a in args], "-q"])

    as_rank.calls = calls
    return as_rank


def _arrays(path):
    with h5py.File(path, "r") as f:
        return ({k: f[k][...] for k in f.keys() if k != "sentence_to_index"}, json.loads(f["sentence_to_index"][0]),
                f.attrs["status"])


def test_the_group_waits_days_for_the_other_shards(torchrun, allennlp_dir, text, tmp_path):
    out = tmp_path / "out.hdf5"
    for rank in (1, 0):
        result = torchrun(rank, text, out, "-w", allennlp_dir)
        assert result.exit_code == 0, result.output
    inits = [call for call in torchrun.calls if call[0] == "init"]
    assert len(inits) == 2
    for _, args, kwargs in inits:
        assert (args[0] if args else kwargs["backend"]) == "gloo"
        assert kwargs["timeout"] >= timedelta(days=1)
    single = embed_file(__import__("spacy_elmo").load_bilm(allennlp_dir), text, tmp_path / "single.hdf5")
    (joined, joined_map, status), (alone, alone_map, _) = _arrays(out), _arrays(single)
    assert status == "complete" and joined_map == alone_map and sorted(joined) == sorted(alone)


def test_resume_counts_a_finished_shard_as_done(torchrun, allennlp_dir, text, tmp_path, inject):
    out = tmp_path / "out.hdf5"
    assert torchrun(1, text, out, "-w", allennlp_dir).exit_code == 0  # process 1 finished its shard
    inject("embed.chunk:1:enospc")  # process 0 stopped after its first chunk
    stopped = torchrun(0, text, out, "-w", allennlp_dir, "--chunk-lines", "1")
    inject("")
    assert stopped.exit_code == 1 and partial_path(shard_path(out, 0, 2)).exists()
    finished = shard_path(out, 1, 2).read_bytes()
    resumed = torchrun(1, text, out, "-w", allennlp_dir, "--resume", "--chunk-lines", "1")
    assert resumed.exit_code == 0, resumed.output  # straight to the barrier: nothing to redo
    assert shard_path(out, 1, 2).read_bytes() == finished and ("barrier",) in torchrun.calls
    resumed = torchrun(0, text, out, "-w", allennlp_dir, "--resume", "--chunk-lines", "1")
    assert resumed.exit_code == 0, resumed.output
    arrays, _, status = _arrays(out)
    assert status == "complete" and sorted(arrays, key=int) == [str(i) for i in range(len(LINES))]
    # a finished shard of other settings is refused, not taken as done
    refused(["embed", text, out, "-w", allennlp_dir, "--shard", "1/2", "--resume", "--layers", "top"],
            "--layers: all in it, top in this run")


def test_a_failed_overwrite_rerun_leaves_no_output_mixing_two_runs(allennlp_bilm, tmp_path):
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("old line one\nold line two\n", encoding="utf-8")
    second.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    out = tmp_path / "out.hdf5"
    for k in range(2):
        embed_file(allennlp_bilm, [first, second], out, shard=(k, 2))
    join_shards(out, 2)
    assert _arrays(out)[0]["0:0"].shape[1] == 3
    first.write_text("a completely new first line here\n", encoding="utf-8")
    # the rerun's shard 0 is committed; its shard 1 never is (the process crashed)
    with pytest.warns(DumpWarning, match="joined an earlier run's shards"):
        embed_file(allennlp_bilm, [first, second], out, shard=(0, 2), overwrite=True)
    assert not out.exists()  # no file with the final name mixes the two runs
    with pytest.raises(DumpError, match="different settings: input files"):
        join_shards(out, 2)  # the old shard 1 is another run's: refused
    embed_file(allennlp_bilm, [first, second], out, shard=(1, 2), overwrite=True)
    join_shards(out, 2)
    arrays, mapping, status = _arrays(out)
    assert status == "complete" and arrays["0:0"].shape[1] == 6 and "0:1" not in arrays
    assert "a completely new first line here" in mapping and "old line one" not in mapping
    # a single run's OUTPUT (arrays of its own) is no join of these shards: a shard leaves it
    single = embed_file(allennlp_bilm, [first, second], tmp_path / "single.hdf5")
    single.replace(out)
    before = out.read_bytes()
    embed_file(allennlp_bilm, [first, second], out, shard=(0, 2), overwrite=True)
    assert out.read_bytes() == before


def test_an_existing_output_is_refused_before_any_work(torchrun, allennlp_dir, text, tmp_path):
    out = tmp_path / "out.hdf5"
    out.write_bytes(b"an earlier output")
    result = torchrun(0, text, out, "-w", allennlp_dir)
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert "out.hdf5 exists; pass --overwrite" in flat(result) and "Traceback" not in result.output
    assert not shard_path(out, 0, 2).exists() and not partial_path(shard_path(out, 0, 2)).exists()
    out.unlink()
    partial_path(out).write_bytes(b"an interrupted single run")
    result = torchrun(1, text, out, "-w", allennlp_dir)
    assert result.exit_code == 1 and "out.hdf5.partial holds an interrupted run" in flat(result)
    assert not shard_path(out, 1, 2).exists()
    assert partial_path(out).read_bytes() == b"an interrupted single run"


def test_the_joins_error_is_one_line(torchrun, allennlp_dir, text, tmp_path):
    out = tmp_path / "out.hdf5"
    result = torchrun(0, text, out, "-w", allennlp_dir)  # process 1 never wrote its shard
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.exception
    assert "cannot join: shard file(s) missing" in flat(result) and "Traceback" not in result.output
    assert ("destroy",) in torchrun.calls


def test_a_sharded_hdf5_output_at_a_url_is_refused_up_front(torchrun, allennlp_dir, text, tmp_path):
    url = "memory://scale-review/out.hdf5"
    result = torchrun(0, text, url, "-w", allennlp_dir)
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.exception
    assert "must be a local path" in flat(result) and "--format parquet" in flat(result)
    refused(["embed", text, url, "-w", allennlp_dir, "--shard", "1/2", "-q"], "must be a local path")
    import fsspec

    assert not fsspec.filesystem("memory").exists("/scale-review")
    assert not [c for c in torchrun.calls if c[0] == "init"]


def test_resume_of_a_finished_shard_through_the_api_changes_nothing(allennlp_bilm, text, tmp_path):
    """`embed_file(..., resume=True)` returns a complete shard of the same settings as it is."""
    out = tmp_path / "out.hdf5"
    for k in range(2):
        embed_file(allennlp_bilm, text, out, shard=(k, 2))
    before = shard_path(out, 0, 2).read_bytes()
    assert embed_file(allennlp_bilm, text, out, shard=(0, 2), resume=True) == shard_path(out, 0, 2)
    assert shard_path(out, 0, 2).read_bytes() == before
    join_shards(out, 2)
    with h5py.File(out, "r") as f:
        assert numpy.isfinite(f["2"][...]).all()
