"""Regression: a lower-cased word table took cased words whose rows could never be looked up.

A table written with lowercase=True looks every token up lower-cased, yet
`write_word_table(['Apple', 'apple', 'Banana'], lowercase=True)` wrote three rows: "Apple" and
"Banana" dead, and two rows for the key "apple". scripts/build_word_table.py lower-cases by
default for a package it does not know, so a cased vector file gave such a table. The writer now
refuses a cased word in a lower-cased table (naming one), and the builder lower-cases the file's
words, keeping the first (most frequent) row of those that lower-case alike.
"""
import importlib.util
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy
import pytest

from spacy_elmo.pretrain.word_table import load_word_table, write_word_table

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "build_word_table.py"


def test_a_lower_cased_table_refuses_cased_words(tmp_path):
    vectors = numpy.arange(6, dtype=numpy.float32).reshape(3, 2)
    with pytest.raises(ValueError, match="'Apple'"):
        write_word_table(tmp_path / "t", ["Apple", "apple", "Banana"], vectors, lowercase=True)
    assert not (tmp_path / "t" / "table.json").exists()
    write_word_table(tmp_path / "cased", ["Apple", "apple", "Banana"], vectors, lowercase=False)  # a cased table
    write_word_table(tmp_path / "lower", ["apple", "banana", "ünïcode"], vectors, lowercase=True)
    vocab, _ = load_word_table(tmp_path / "lower")
    assert vocab.encode(["Apple", "BANANA", "ÜNÏCODE"]) == [0, 1, 2]


def _script():
    spec = importlib.util.spec_from_file_location("build_word_table_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_builder_merges_the_casings_of_a_cased_file_keeping_the_first_row(tmp_path, monkeypatch):
    pytest.importorskip("spacy")
    script = _script()
    # a package the builder does not know, ordered by frequency: "The" before "the", "Apple" before "apple"
    file_words = ["The", "the", "Apple", "banana", "apple", "Cherry"]
    vectors = numpy.arange(len(file_words) * 2, dtype=numpy.float32).reshape(-1, 2)
    array = tmp_path / "vectors.npy"
    numpy.save(array, vectors)
    dist = SimpleNamespace(version="1.0", metadata={})
    monkeypatch.setattr(script, "package_files", lambda package: (array, tmp_path / "words.parquet", dist))
    monkeypatch.setattr(script, "read_words", lambda path: list(file_words))
    text = tmp_path / "text.txt"
    text.write_text("the apple and THE Cherry\n")
    out = tmp_path / "table"
    monkeypatch.setattr(sys, "argv", ["build_word_table.py"])
    script.main([str(out), "--package", "cased-vectors", "--license", "CC0-1.0", "--text", str(text),
                 "--top-text", "10", "--top-vectors", "10", "--dtype", "float32"])
    table = json.loads((out / "table.json").read_text())
    assert table["lowercase"] is True
    vocab, read = load_word_table(out)
    assert vocab.words == ["the", "apple", "banana", "cherry"]  # one row a key, in the file's order
    numpy.testing.assert_array_equal(read.numpy(), vectors[[0, 2, 3, 5]])  # each key's first row
    assert vocab.encode(["The", "APPLE", "cherry"]) == [0, 1, 3]
