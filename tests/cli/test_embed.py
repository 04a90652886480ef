"""`embed` on the command line: bad input is one clear message, exit code 1, no traceback, nothing
written; the weighted layers and their old spelling."""
import h5py
import pytest

from spacy_elmo.cli import app

from .invoke import ELF_HEADER, flat, refused, runner


def test_embed_into_a_missing_directory(allennlp_dir, tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("hello world\n")
    refused(["embed", text, tmp_path / "missing" / "dir" / "out.h5", "--weights", allennlp_dir, "-q"],
            "missing/dir: no such directory")
    assert not (tmp_path / "missing").exists()


def test_embed_invalid_utf8_names_the_line_and_replace_reads_on(allennlp_dir, tmp_path):
    text = tmp_path / "in.txt"
    text.write_bytes(b"hello world\nnaive caf\xe9 au lait\nlast line\n")
    out = tmp_path / "out.h5"
    refused(["embed", text, out, "--weights", allennlp_dir, "-q"],
            "line 2 (column 10)", "0xe9, not UTF-8", "--encoding-errors replace")
    assert not out.exists() and not out.with_name("out.h5.partial").exists()
    result = runner.invoke(app, ["embed", str(text), str(out), "--weights", str(allennlp_dir), "-q",
                                 "--encoding-errors", "replace"])
    assert result.exit_code == 0, result.output
    with h5py.File(out, "r") as f:
        assert f["1"].shape[1] == 4 and f.attrs["status"] == "complete"


def test_embed_binary_file(allennlp_dir, tmp_path):
    binary = tmp_path / "program"
    binary.write_bytes(ELF_HEADER * 50)
    refused(["embed", binary, tmp_path / "out.h5", "--weights", allennlp_dir, "-q"], "line 1",
            "NUL byte (a binary file?)")


@pytest.mark.parametrize("args,expected", [
    (["--layers", "weighted"], "--layers weighted needs --layer-weights"),
    (["--layers", "weighted", "--layer-weights", "1"], "--layer-weights: 3 comma-separated weights"),
    (["--layers", "weighted", "--layer-weights", "a,b,c"], "--layer-weights must be comma-separated numbers"),
    (["--layers", "mix", "--mix", "1"], "--layer-weights: 3 comma-separated weights"),
    (["--layers", "mix", "--mix", "x"], "--layer-weights must be comma-separated numbers"),
    (["--layers", "weighted", "--mix", "1,0,0", "--layer-weights", "1,0,0"], "pass --layer-weights only"),
])
def test_embed_bad_layer_weights_name_the_option(allennlp_dir, tmp_path, args, expected):
    text = tmp_path / "in.txt"
    text.write_text("hello world\n")
    refused(["embed", text, tmp_path / "o.h5", "--weights", allennlp_dir, "-q", *args], expected)
    assert not (tmp_path / "o.h5").exists() and not (tmp_path / "o.h5.partial").exists()


def test_embed_unknown_encoding_errors_mode(allennlp_dir, tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("fine\n")
    refused(["embed", text, tmp_path / "o.h5", "--weights", allennlp_dir, "--encoding-errors", "ignore"],
            "unknown encoding error handling 'ignore'")


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
