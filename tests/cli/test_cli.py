"""The command line as a whole (spacy_elmo/cli/__init__.py, the entry points), and the commands together:
embed, convert and info on one model, on a URL, and their errors without tracebacks. Each command's own
tests are tests/cli/test_<command>.py."""
import json
import subprocess
import sys

import h5py

from spacy_elmo.bilm.engine import backends
from spacy_elmo.cli import app

from .invoke import flat, runner


def test_help_lists_commands():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("pretrain", "perplexity", "embed", "convert", "info"):
        assert command in result.output


def test_python_m_and_spacy_cli_entry_points():
    out = subprocess.run([sys.executable, "-m", "spacy_elmo", "embed", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "sentence_to_index" not in out.stderr and "input_path" in out.stdout
    out = subprocess.run([sys.executable, "-m", "spacy", "elmo", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "pretrain" in out.stdout


def test_embed_convert_info(allennlp_dir, tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("hello world\n\nsecond line .\n")
    out = tmp_path / "out.hdf5"
    result = runner.invoke(app, ["embed", str(text), str(out), "--weights", str(allennlp_dir), "--quiet"])
    assert result.exit_code == 0, result.output
    with h5py.File(out, "r") as f:
        assert f["1"].shape == (3, 0, 32) and f["2"].shape == (3, 3, 32)
    result = runner.invoke(app, ["convert", str(allennlp_dir), str(tmp_path / "native")])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["convert", str(tmp_path / "native"), str(tmp_path / "pub"), "--to", "published"])
    assert result.exit_code == 0 and (tmp_path / "pub" / "weights.hdf5").exists()
    result = runner.invoke(app, ["info", str(tmp_path / "pub"), "--json"])
    assert result.exit_code == 0 and json.loads(result.output)["width"] == 32
    cpu = json.loads(result.output)["cpu_inference"]
    assert set(cpu) == {"backend", "backends", "huge_page_tensors"}
    assert cpu["backend"] == backends.resolve("auto") and cpu["backends"]["reference"] is None
    result = runner.invoke(app, ["info", str(tmp_path / "pub")])
    assert result.exit_code == 0 and "backend (auto)" in result.output and "onednn+kernel" in result.output
    # an explicit backend for `embed`; a bad one is one clear error
    result = runner.invoke(app, ["embed", str(text), str(out), "--weights", str(allennlp_dir), "--quiet",
                                 "--overwrite", "--backend", "reference"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["embed", str(text), str(out), "--weights", str(allennlp_dir), "--backend", "gpu"])
    assert result.exit_code == 1 and "--backend: backend 'gpu': unknown backend" in result.output


def test_clear_errors_without_tracebacks(allennlp_dir, tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("x\n")
    result = runner.invoke(app, ["embed", str(text), str(tmp_path / "o.h5"), "--weights", str(tmp_path)])
    assert result.exit_code == 1 and "expected a directory holding elmo.json" in flat(result)
    result = runner.invoke(app, ["perplexity", str(allennlp_dir), str(text)])
    assert result.exit_code == 1 and "no softmax" in flat(result)
    result = runner.invoke(app, ["embed", str(text), str(tmp_path / "o.h5"), "--weights", str(allennlp_dir),
                                 "--layers", "bogus"])
    assert result.exit_code == 1 and "unknown layer mode" in flat(result)
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)


def test_info_and_embed_take_a_url(tmp_path, cache, served):
    url = served.url("elmo.zip")
    result = runner.invoke(app, ["info", url, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["path"] == url  # the progress bar went to stderr
    text = tmp_path / "in.txt"
    text.write_text("hello world\n")
    out = tmp_path / "out.hdf5"
    result = runner.invoke(app, ["embed", str(text), str(out), "--weights", url, "--quiet"])
    assert result.exit_code == 0, result.output
    with h5py.File(out, "r") as f:
        assert f["0"].shape == (3, 2, 8)
    result = runner.invoke(app, ["convert", url, str(tmp_path / "native")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "native" / "elmo.json").is_file()
