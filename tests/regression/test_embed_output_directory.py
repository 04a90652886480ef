"""Regression: an HDF5 OUTPUT that is an existing directory failed only after all the work.

`embed in.txt some_dir` embedded everything, then crashed with
IsADirectoryError at the commit and left some_dir.partial behind. It is now
refused up front, as `--format parquet` refuses a file, before the input is
read or anything is written.
"""
import pytest

from spacy_elmo.embedding.dump import DumpError, embed_file

from ..cli.invoke import refused


def test_a_directory_output_is_refused_before_any_work(allennlp_bilm, allennlp_dir, biLM_calls, tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("The cat sat .\n", encoding="utf-8")
    directory = tmp_path / "adir"
    directory.mkdir()
    with pytest.raises(DumpError, match="adir: is a directory"):
        embed_file(allennlp_bilm, text, directory)
    assert biLM_calls["sentences"] == 0
    refused(["embed", text, directory, "--weights", allennlp_dir, "-q"], "is a directory", "--format parquet")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "in.txt"]
    assert not any(directory.iterdir())
