"""The command line, through typer's runner and as real subprocesses."""
import json
import os
import subprocess
import sys

import h5py
from typer.testing import CliRunner

from spacy_elmo.bilm.engine import backends
from spacy_elmo.cli import app

runner = CliRunner()


def flat(result) -> str:
    """The output with wasabi's line wrapping undone."""
    return " ".join(result.output.split())


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


def test_embed_layers_weighted_and_its_old_spelling(allennlp_dir, tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("hello world\n\nsecond line .\n")
    common = ["--weights", str(allennlp_dir), "--quiet"]
    new = runner.invoke(app, ["embed", str(text), str(tmp_path / "new.h5"), *common, "--layers", "weighted",
                              "--layer-weights", "0.2,0.3,0.5"])
    assert new.exit_code == 0, new.output
    assert "mix" not in new.output
    old = runner.invoke(app, ["embed", str(text), str(tmp_path / "old.h5"), *common, "--layers", "mix",
                              "--mix", "0.2,0.3,0.5"])
    assert old.exit_code == 0, old.output
    # one warning line for both old names, naming the new ones
    assert flat(old).count("now called") == 1
    assert "--layers weighted and --layer-weights" in flat(old) and "removed" in flat(old)
    with h5py.File(tmp_path / "new.h5", "r") as a, h5py.File(tmp_path / "old.h5", "r") as b:
        assert a.attrs["layers"] == b.attrs["layers"] == "weighted"
        for key in ("0", "1", "2"):
            assert a[key].shape == b[key].shape and a[key][...].tobytes() == b[key][...].tobytes()
    # either old name alone warns too
    for args in (["--layers", "mix", "--layer-weights", "0.2,0.3,0.5"], ["--layers", "weighted", "--mix", "1,0,0"]):
        result = runner.invoke(app, ["embed", str(text), str(tmp_path / "o.h5"), *common, "--overwrite", *args])
        assert result.exit_code == 0 and flat(result).count("now called") == 1, result.output
    # --help shows the new option only
    result = runner.invoke(app, ["embed", "--help"])
    assert "--layer-weights" in result.output and "--mix" not in result.output


def test_info_names_the_cpu(tmp_path):
    from spacy_elmo.cli.info import cpu_name

    result = runner.invoke(app, ["info", "--json"])
    machine = json.loads(result.output)["machine"]
    assert machine["cpu"] == cpu_name() and machine["cpu"] not in ("", "unknown")
    assert machine["cpu_cores"] >= 1 and "cuda_device" in machine
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Some CPU @ 2.00GHz\n")
    assert cpu_name(cpuinfo) == "Some CPU @ 2.00GHz"
    assert cpu_name(tmp_path / "missing")  # falls back to what platform knows


def test_clear_errors_without_tracebacks(allennlp_dir, tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("x\n")
    result = runner.invoke(app, ["embed", str(text), str(tmp_path / "o.h5"), "--weights", str(tmp_path)])
    assert result.exit_code == 1 and "no options file" in flat(result)
    result = runner.invoke(app, ["perplexity", str(allennlp_dir), str(text)])
    assert result.exit_code == 1 and "no softmax" in flat(result)
    result = runner.invoke(app, ["embed", str(text), str(tmp_path / "o.h5"), "--weights", str(allennlp_dir),
                                 "--layers", "bogus"])
    assert result.exit_code == 1 and "unknown layer mode" in flat(result)
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)


def test_commands_ask_for_huge_pages_unless_the_user_chose(monkeypatch, tmp_path):
    from spacy_elmo.cli._util import HUGE_PAGES_VARIABLE

    text = tmp_path / "in.txt"
    text.write_text("x\n")
    monkeypatch.delenv(HUGE_PAGES_VARIABLE, raising=False)
    # fails; the setting stays
    runner.invoke(app, ["embed", str(text), str(tmp_path / "o.h5"), "--weights", str(tmp_path)])
    assert os.environ[HUGE_PAGES_VARIABLE] == "1"
    monkeypatch.setenv(HUGE_PAGES_VARIABLE, "0")
    result = runner.invoke(app, ["info", "--json"])
    assert result.exit_code == 0 and os.environ[HUGE_PAGES_VARIABLE] == "0"
    assert json.loads(result.output)["cpu_inference"]["huge_page_tensors"] is False
