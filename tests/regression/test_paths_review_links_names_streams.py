"""Regression: paths spelled another way, names that are not UTF-8, links, and a stderr that goes away.

A review of paths and the process environment found (each test below failed on the old code):
- the one-run-per-output lock was named from the path as spelled: a symlink or a `..` spelling of
  the same folder took another lock, and two `pretrain` runs interleaved their log;
- a corpus or an archive whose file name is not UTF-8 crashed (`str(path).encode()`), and a native
  model in such a folder was written but never read (safetensors opens UTF-8 paths only);
- the progress bar raised EPIPE where stderr's reader had gone (`2>&1 | tee log` after the ssh
  session dropped), which stopped a pretraining without its final checkpoint;
- `embed` replaced a symlinked output instead of the file it names, wrote a dangling link's name as
  a file, wrote `out/` as a file `out`, and failed after loading the model, in a double traceback,
  for a name too long for the files it writes beside it;
- a model source `Path("x ")` was stripped to `x`, loading another model;
- `download --cache-dir ""` filled the working directory;
- `--resume` from another working directory warned that the run would differ for the same files.
"""
import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import h5py
import pytest

from spacy_elmo.embedding.dump import DumpError, check_hdf5_output, followed_output_link
from spacy_elmo.faults import VARIABLE
from spacy_elmo.io import WeightsError, load_model, save_native
from spacy_elmo.io.file_lock import OutputBusyError, RunLock, run_lock_path
from spacy_elmo.io.sources import cache_key, parse_source, resolve_source
from spacy_elmo.pretrain.text_corpus import _cache_key
from spacy_elmo.progress_bars import progress_bar

LATIN1 = os.fsdecode(b"mod\xe8le")  # a name whose bytes are not UTF-8 (Latin-1's "modele" with a grave)


def test_every_spelling_of_an_output_takes_one_lock(tmp_path):
    real = tmp_path / "disk" / "run"
    real.mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    (tmp_path / "disk" / "other").mkdir()
    spellings = [real, tmp_path / "link", tmp_path / "disk" / "other" / ".." / "run"]
    assert len({run_lock_path(path) for path in spellings}) == 1
    with RunLock(run_lock_path(real), real):
        for path in spellings[1:]:
            with pytest.raises(OutputBusyError, match="is being written by another run"):
                RunLock(run_lock_path(path), path)


def test_names_that_are_not_utf8(tmp_path, allennlp_dir):
    corpus = tmp_path / os.fsdecode(b"corp\xfcs.txt")
    corpus.write_text("a b c\n", encoding="utf-8")
    assert len(_cache_key([corpus], "en", 100, 10)) == 16
    archive = tmp_path / (LATIN1 + ".tar.gz")
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(allennlp_dir, arcname="model")
    assert cache_key(parse_source(archive)).startswith("mod_le-")
    unpacked = resolve_source(archive, cache=tmp_path / "cache", progress=False)
    folder = tmp_path / LATIN1
    save_native(folder, load_model(unpacked).bilm)
    assert load_model(folder).bilm.width == load_model(allennlp_dir).bilm.width


class _GoneReader(io.StringIO):
    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        raise BrokenPipeError(32, "Broken pipe")


def test_a_bar_whose_stream_fails_goes_quiet():
    bar = progress_bar(total=5, file=_GoneReader(), mininterval=0)
    for _ in range(5):
        bar.update(1)
    bar.close()
    assert bar.n == 5


def _pretrain(config, corpus, run, *extra, cwd=None, fault="", stderr=None):
    env = {k: v for k, v in os.environ.items() if k != VARIABLE}
    env.update(OMP_NUM_THREADS="1", TQDM_MININTERVAL="0", PYTHONPATH=str(Path(__file__).parents[2]))
    if fault:
        env[VARIABLE] = fault
    command = [sys.executable, "-m", "spacy_elmo", "pretrain", str(config), str(run), "--paths.train", str(corpus),
               "--training.max_steps", "4", "--training.checkpoint_every", "1", "--training.threads", "1", *extra]
    return subprocess.run(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=stderr or subprocess.PIPE,
                          text=True, timeout=600)


def test_pretraining_goes_on_where_stderr_has_no_reader(tiny_config_path, small_corpus, tmp_path):
    read, write = os.pipe()
    os.close(read)  # the reader has gone before the run starts: every write to stderr is EPIPE
    try:
        done = _pretrain(tiny_config_path, small_corpus, tmp_path / "run", stderr=write)
    finally:
        os.close(write)
    assert done.returncode == 0, done.stdout[-2000:]
    assert load_model(tmp_path / "run" / "model-last").metadata["finished"] is True


def test_a_resume_from_another_folder_names_the_same_files(tiny_config_path, small_corpus, tmp_path):
    (tmp_path / "sub").mkdir()
    stopped = _pretrain(tiny_config_path, small_corpus.name, "run", cwd=tmp_path, fault="pretrain.step:2:term")
    assert stopped.returncode == 143, stopped.stderr[-2000:]
    resumed = _pretrain(tiny_config_path, f"../{small_corpus.name}", "../run", "--resume", cwd=tmp_path / "sub")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "changed settings" not in resumed.stdout + resumed.stderr
    moved = _pretrain(tiny_config_path, small_corpus.name, "run", "--resume", "--training.max_steps", "6",
                      cwd=tmp_path)
    assert "[training] max_steps: 4 -> 6" in moved.stdout + moved.stderr  # a real change is still named


def test_embed_writes_through_a_link_and_refuses_what_it_cannot_write(tmp_path, allennlp_dir):
    target = tmp_path / "big" / "emb.hdf5"
    target.parent.mkdir()
    target.write_text("old")
    (tmp_path / "emb.hdf5").symlink_to(target)
    assert followed_output_link(str(tmp_path / "emb.hdf5")) == str(target)
    (tmp_path / "in.txt").write_text("The bank .\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "spacy_elmo", "embed", "-q", str(tmp_path / "in.txt"),
                           str(tmp_path / "emb.hdf5"), "--overwrite", "-w", str(allennlp_dir)],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "emb.hdf5").is_symlink() and h5py.is_hdf5(target)

    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(DumpError, match="is a symbolic link to nothing"):
        followed_output_link(str(tmp_path / "dangling"))
    with pytest.raises(DumpError, match="names a folder"):
        check_hdf5_output(f"{tmp_path}/out/")
    with pytest.raises(DumpError, match="choose a shorter name"):
        check_hdf5_output(tmp_path / ("x" * 230 + ".hdf5"))


def test_a_path_is_read_as_named_and_an_empty_cache_is_refused(tmp_path, allennlp_dir):
    (tmp_path / "x ").mkdir()
    (tmp_path / "x").mkdir()
    assert parse_source(tmp_path / "x ").path == tmp_path / "x "
    assert parse_source(str(tmp_path / "x ")).path == tmp_path / "x "
    assert parse_source(f"  {tmp_path / 'x'}\n").path == tmp_path / "x"  # pasted with spaces: no such path
    archive = tmp_path / "small.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(allennlp_dir, arcname="model")
    with pytest.raises(WeightsError, match="empty cache folder"):
        resolve_source(archive, cache="", progress=False)
    done = subprocess.run([sys.executable, "-m", "spacy_elmo", "download", str(archive), "--cache-dir", ""],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 1 and "empty cache folder" in done.stdout + done.stderr
    assert not (tmp_path / "models").exists() and not (tmp_path / "locks").exists()


@pytest.mark.parametrize("kind", ["file", "dangling link"])
def test_pretrain_names_an_output_that_is_not_a_folder(tiny_config_path, small_corpus, tmp_path, kind):
    output = tmp_path / "out"
    if kind == "file":
        output.write_text("")
    else:
        output.symlink_to(tmp_path / "nowhere")
    done = _pretrain(tiny_config_path, small_corpus, output)
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 1
    assert ("exists and is a file, not a directory" if kind == "file" else "a symbolic link to nothing") in said


def test_shards_and_their_join_follow_a_symlinked_output(tmp_path, allennlp_dir):
    from spacy_elmo.cli import app
    from tests.cli.invoke import runner

    text = tmp_path / "in.txt"
    text.write_text("The bank .\nA river .\n", encoding="utf-8")
    target = tmp_path / "big" / "out.hdf5"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "link.hdf5"
    link.symlink_to(target)
    for k in range(2):
        result = runner.invoke(app, ["embed", str(text), str(link), "-w", str(allennlp_dir), "-q", "--shard", f"{k}/2"])
        assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["embed", str(text), str(link), "--join", "2", "--overwrite"])
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and h5py.is_hdf5(target)
