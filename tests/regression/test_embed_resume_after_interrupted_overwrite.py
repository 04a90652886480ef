"""Regression: an interrupted `embed --overwrite` run could not be resumed as docs/cli.md says.

It left both OUTPUT (the earlier run's) and OUTPUT.partial; `--resume` then
said "OUTPUT exists; pass --overwrite", and following that advice deleted
the units already embedded. `--resume` now continues the .partial even where
OUTPUT exists, and replaces OUTPUT at the commit, as the interrupted run
would have; with no .partial it says there is nothing to resume.
"""
import h5py
import pytest

from spacy_elmo.cli import app
from spacy_elmo.embedding.dump import DumpError, embed_file, partial_path

from ..cli.invoke import flat, runner

LINES = ["The cat sat .", "a dog ran off", "A second , longer line of text here", "birds fly south", "", "end ."]


def test_resume_continues_an_interrupted_overwrite_and_replaces_output(allennlp_bilm, biLM_calls, tmp_path,
                                                                       inject):
    old_text, text = tmp_path / "old.txt", tmp_path / "in.txt"
    old_text.write_text("only one line\n", encoding="utf-8")
    text.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    out = tmp_path / "out.hdf5"
    embed_file(allennlp_bilm, old_text, out)  # an earlier, finished run
    inject("embed.chunk:2:enospc")
    with pytest.raises(OSError):
        embed_file(allennlp_bilm, text, out, chunk_lines=2, overwrite=True)
    inject("")
    assert out.exists() and partial_path(out).exists()
    embedded = biLM_calls["sentences"]
    embed_file(allennlp_bilm, text, out, chunk_lines=2, resume=True)
    assert biLM_calls["sentences"] - embedded == 2  # only the last chunk: the 4 units written are kept
    assert not partial_path(out).exists()
    with h5py.File(out, "r") as f:
        assert f.attrs["status"] == "complete" and sorted(k for k in f.keys() if k.isdigit()) == [
            str(i) for i in range(len(LINES))]


def test_resume_of_a_finished_output_says_there_is_nothing_to_resume(allennlp_bilm, tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("one line\n", encoding="utf-8")
    out = embed_file(allennlp_bilm, text, tmp_path / "out.hdf5")
    with pytest.raises(DumpError, match="nothing to resume.*--overwrite"):
        embed_file(allennlp_bilm, text, out, resume=True)


def test_the_command_resumes_it_too(allennlp_dir, tmp_path, inject):
    text = tmp_path / "in.txt"
    text.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    out = tmp_path / "out.hdf5"
    common = [str(text), str(out), "--weights", str(allennlp_dir), "-q", "--chunk-lines", "2"]
    assert runner.invoke(app, ["embed", *common]).exit_code == 0
    inject("embed.chunk:1:enospc")
    assert runner.invoke(app, ["embed", *common, "--overwrite"]).exit_code == 1
    inject("")
    result = runner.invoke(app, ["embed", *common, "--resume"])
    assert result.exit_code == 0, flat(result)
    assert not partial_path(out).exists()
