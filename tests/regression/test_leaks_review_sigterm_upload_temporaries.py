"""Regression: what a stopped run left behind.

A review of leftovers found (each test below failed on the old code):
- `embed` died at SIGTERM (a job scheduler's, `timeout`'s, Kubernetes' stop) without a word: a
  remote output's local copy stayed in the temporary folder and an empty .partial made the next run
  refuse; it now stops as at Ctrl-C, saying what is kept, with exit 143;
- Ctrl-C during the upload of a remote HDF5 output left the finished file in the temporary folder,
  unmentioned, and said "rerun to start again": the file is now named, with what to do;
- a kill while a checkpoint or a model file was written left its `.NAME.PID-TOKEN.tmp` for good,
  inside model-best too (copied with it); a run now removes those of dead writers when it starts.
"""
import os
import subprocess
import sys

import fsspec
import h5py
import pytest

from spacy_elmo.embedding.dump import embed_file
from spacy_elmo.faults import VARIABLE

LINES = "The cat sat .\nA dog ran off .\nHello there .\n"


def _embed(tmp_path, *args, fault=""):
    env = {k: v for k, v in os.environ.items() if k != VARIABLE}
    env.update(OMP_NUM_THREADS="1", TMPDIR=str(tmp_path / "tmp"))
    if fault:
        env[VARIABLE] = fault
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "spacy_elmo", "embed", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=600)


def test_sigterm_stops_embed_as_ctrl_c_does(tmp_path, allennlp_dir):
    text = tmp_path / "in.txt"
    text.write_text(LINES, encoding="utf-8")
    out = tmp_path / "out.hdf5"
    stopped = _embed(tmp_path, text, out, "-w", allennlp_dir, "--chunk-lines", 1, "-q", fault="embed.chunk:1:term")
    said = " ".join((stopped.stdout + stopped.stderr).split())
    assert stopped.returncode == 143, said
    assert "Interrupted by SIGTERM" in said and "rerun with --resume" in said
    resumed = _embed(tmp_path, text, out, "-w", allennlp_dir, "--chunk-lines", 1, "-q", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    with h5py.File(out, "r") as f:
        assert f.attrs["status"] == "complete" and sorted(k for k in f if k.isdigit()) == ["0", "1", "2"]

    remote = _embed(tmp_path, text, "memory://bucket/out.hdf5", "-w", allennlp_dir, "--chunk-lines", 1, "-q",
                    fault="embed.chunk:1:term")
    assert remote.returncode == 143, remote.stdout + remote.stderr
    assert os.listdir(tmp_path / "tmp") == []  # the local copy of a remote output is not left behind


def test_ctrl_c_during_an_upload_names_the_finished_file(tmp_path, allennlp_bilm, monkeypatch):
    text = tmp_path / "in.txt"
    text.write_text(LINES, encoding="utf-8")
    memory = fsspec.filesystem("memory")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(type(memory), "put_file", interrupted)
    with pytest.raises(KeyboardInterrupt) as stopped:
        embed_file(allennlp_bilm, text, "memory://bucket/up.hdf5")
    note = stopped.value.note
    assert "the upload to memory://bucket/up.hdf5 was stopped; the finished output is kept at" in note
    kept = note.split("kept at ")[1].split(":")[0]
    with h5py.File(kept, "r") as f:
        assert f.attrs["status"] == "complete"


def test_a_run_removes_the_temporaries_of_writers_killed_mid_write(tiny_config_path, small_corpus, tmp_path):
    from spacy_elmo.io.atomic import temporary_path
    from spacy_elmo.pretrain import load_config, pretrain

    config = load_config(tiny_config_path, {"paths.train": str(small_corpus), "training.max_steps": 2,
                                            "training.eval_every": 1000, "training.threads": 1})
    run = tmp_path / "run"
    pretrain(config, run, progress=False)
    # what a SIGKILL during a checkpoint and during a model save left (a dead process's names)
    left = [run / ".checkpoint.pt.999999-0badc0de.tmp", run / "model-best" / ".bilm.safetensors.999999-0badc0de.tmp"]
    for path in left:
        path.write_bytes(b"half a file")
    mine = temporary_path(run / "model-last" / "notes.txt")  # this process's own: not abandoned
    mine.write_bytes(b"being written")
    other = run / "model-best" / "notes.tmp"  # not a temporary's name: a user's file
    other.write_bytes(b"kept")
    config = load_config(tiny_config_path, {"paths.train": str(small_corpus), "training.max_steps": 3,
                                            "training.eval_every": 1000, "training.threads": 1})
    pretrain(config, run, resume=True, progress=False)
    assert not any(path.exists() for path in left)
    assert mine.exists() and other.exists()


def test_overwrite_removes_a_killed_runs_temporary_part_at_a_url(tmp_path, allennlp_bilm):
    pytest.importorskip("pyarrow.parquet")
    text = tmp_path / "in.txt"
    text.write_text(LINES, encoding="utf-8")
    memory = fsspec.filesystem("memory")
    target = "memory://leaks-bucket/pq"
    embed_file(allennlp_bilm, text, target, output_format="parquet")
    stale = "/leaks-bucket/pq/.part-00000-000000.parquet.999999.tmp"  # a SIGKILLed run's part, half written
    memory.pipe(stale, b"half a part")
    embed_file(allennlp_bilm, text, target, output_format="parquet", overwrite=True)
    names = [name.rsplit("/", 1)[-1] for name in memory.ls("/leaks-bucket/pq", detail=False)]
    assert not memory.exists(stale) and names == ["part-00000-000000.parquet"]


def test_an_archive_replaced_at_its_path_keeps_one_entry_in_the_cache(tmp_path, allennlp_dir):
    import tarfile

    from spacy_elmo.io import load_model
    from spacy_elmo.io.sources import resolve_source

    archive = tmp_path / "model.tar.gz"
    other = tmp_path / "other.tar.gz"
    for path in (archive, other):
        with tarfile.open(path, "w:gz") as tar:
            tar.add(allennlp_dir, arcname="model")
    cache = tmp_path / "cache"
    kept = resolve_source(other, cache=cache, progress=False)  # another archive's entry: never touched
    entries = []
    for second in range(3):  # fetched again to the same path: a new size or time each time
        os.utime(archive, ns=(second * 10**9, second * 10**9))
        entries.append(resolve_source(archive, cache=cache, progress=False))
    assert len(set(entries)) == 3
    assert sorted(p.name for p in (cache / "models").iterdir()) == sorted([entries[-1].name, kept.name])
    assert load_model(entries[-1]).bilm.width == load_model(kept).bilm.width
