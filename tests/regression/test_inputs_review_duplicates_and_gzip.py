"""Regression: one file under two spellings was embedded twice, and `.spacy.gz` was not read.

What went wrong: `["a.txt", "./a.txt"]`, or a `memory://` URL plus a glob
matching it, gave the same file twice, embedded twice under different keys;
and a gzipped DocBin (`d.spacy.gz`) was told to be a DocBin but read
compressed, failing with a misleading "not a spaCy DocBin" error.

What happens now: inputs are kept once by their resolved identity (the first
spelling, in order), and a `.spacy.gz` DocBin is read decompressed, giving the
same units as the `.spacy` file.
"""
import gzip
import os

import fsspec
import pytest
import spacy
from spacy.tokens import DocBin

from spacy_elmo.embedding import inputs
from spacy_elmo.embedding.inputs import DumpError


def test_a_local_file_under_two_spellings_is_one_input(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("x\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("y\n", encoding="utf-8")
    os.symlink(tmp_path / "a.txt", tmp_path / "link.txt")
    found = inputs.expand_inputs(["b.txt", "a.txt", "./a.txt", str(tmp_path / "a.txt"), "*.txt", "link.txt"])
    assert found == ["b.txt", "a.txt"]


def test_a_url_and_a_glob_matching_it_are_one_input():
    fs = fsspec.filesystem("memory")
    fs.pipe("/review_dup/a.txt", b"x\n")
    fs.pipe("/review_dup/b.txt", b"y\n")
    try:
        found = inputs.expand_inputs(["memory://review_dup/a.txt", "memory://review_dup/*.txt"])
        assert len(found) == 2 and found[0] == "memory://review_dup/a.txt" and found[1].endswith("b.txt")
    finally:
        fs.rm("/review_dup", recursive=True)


def test_a_gzipped_docbin_is_read(tmp_path):
    nlp = spacy.blank("en")
    data = DocBin(docs=[nlp("One two ."), nlp("Three .")]).to_bytes()
    (tmp_path / "d.spacy").write_bytes(data)
    (tmp_path / "d.spacy.gz").write_bytes(gzip.compress(data))
    plain = [u.tokens for u in inputs.read_units(str(tmp_path / "d.spacy"), "spacy")]
    fmt = inputs.detect_format(str(tmp_path / "d.spacy.gz"))
    inputs.check_input(str(tmp_path / "d.spacy.gz"), fmt)
    assert [u.tokens for u in inputs.read_units(str(tmp_path / "d.spacy.gz"), fmt)] == plain


def test_a_truncated_gzipped_docbin_is_one_error(tmp_path):
    data = gzip.compress(DocBin(docs=[spacy.blank("en")("One two .")]).to_bytes())
    (tmp_path / "d.spacy.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(DumpError, match="not a complete gzip file"):
        inputs.check_input(str(tmp_path / "d.spacy.gz"), "spacy")
