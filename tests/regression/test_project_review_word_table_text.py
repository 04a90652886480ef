"""Regression: scripts/build_word_table.py counted a table from noise, from nothing, and kept a stale record.

- A `.spacy` corpus as --text (scripts/pretrain.py passes its --train straight to it, and pretraining
  reads .spacy files) was read as lines of its compressed bytes: exit 0, a table of the words of
  noise. The text is now read as pretraining reads it (spacy_elmo.pretrain.text_corpus): a DocBin's
  sentences, as their tokens.
- An empty text gave exit 0 and a table of the vector file's words alone, as if of that text: it
  now fails in one line.
- Rebuilding a table kept the run_settings.json scripts/pretrain.py had written beside it, naming the
  text of the table before: pretrain.py then reused a table built from other text as its own. The
  builder now replaces that record with the text it read, by contents.

The vector package is a fake of six words (as in test_pretrain_data_review_lowercase_table).
"""
import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import numpy
import pytest
import spacy
from spacy.tokens import Doc, DocBin

from spacy_elmo.resumable_training import RUN_SETTINGS, path_identity, read_record, record_settings

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
FILE_WORDS = ["the", "cat", "sat", "mat", "dog", "ran"]


def _module(name: str):
    spec = importlib.util.spec_from_file_location(f"{name}_under_test", SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def build(monkeypatch, tmp_path):
    """build_word_table.main(OUT, --text TEXT...) on the fake package; its exit status."""
    script = _module("build_word_table")
    array = tmp_path / "vectors.npy"
    numpy.save(array, numpy.arange(len(FILE_WORDS) * 2, dtype=numpy.float32).reshape(-1, 2))
    dist = SimpleNamespace(version="1.0", metadata={})
    monkeypatch.setattr(script, "package_files", lambda package: (array, tmp_path / "words.parquet", dist))
    monkeypatch.setattr(script, "read_words", lambda path: list(FILE_WORDS))

    def run(out, *texts, extra=()) -> int:
        argv = [str(out), "--package", "fake-vectors", "--license", "CC0-1.0", "--text", *map(str, texts),
                "--top-text", "10", "--top-vectors", "0", "--dtype", "float32", *extra]
        try:
            script.main(argv)
        except SystemExit as exited:
            return exited.code if isinstance(exited.code, int) else 1
        return 0

    return run


def test_a_spacy_corpus_is_read_as_its_sentences(build, tmp_path):
    nlp = spacy.blank("en")
    docs = [Doc(nlp.vocab, words=["The", "cat", "sat", "."], sent_starts=[True, False, False, False]),
            Doc(nlp.vocab, words=["A", "dog", "ran", ".", "The", "mat"],
                sent_starts=[True, False, False, False, True, False])]
    DocBin(docs=docs).to_disk(tmp_path / "train.spacy")
    assert build(tmp_path / "table", tmp_path / "train.spacy") == 0
    info = json.loads((tmp_path / "table" / "table.json").read_text())
    assert info["counts"]["text_lines"] == 3 and info["counts"]["text_tokens"] == 10  # three sentences
    assert (tmp_path / "table" / "words.txt").read_text().split() == ["the", "cat", "sat", "mat", "dog", "ran"]
    assert info["pruning"]["text"] == ["train.spacy"]


def test_an_empty_text_is_an_error(build, capsys, tmp_path):
    (tmp_path / "empty.txt").write_text("\n  \n")
    assert build(tmp_path / "table", tmp_path / "empty.txt") == 1
    out = capsys.readouterr().out
    assert "no line of text read from" in out and "empty.txt" in out
    assert not (tmp_path / "table" / "table.json").exists()


def test_a_rebuilt_table_records_its_own_text(build, tmp_path):
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    first.write_text("the cat sat on the mat\n")
    second.write_text("the dog ran\n")
    table = tmp_path / "table"
    assert build(table, first) == 0
    record_settings(table, {"text": path_identity(str(first))})  # as scripts/pretrain.py records it
    assert build(table, second) == 0  # rebuilt by hand from other text
    assert read_record(table)["settings"] == {"text": path_identity(str(second))}
    # so scripts/pretrain.py --train first.txt no longer reuses it as built from first.txt
    pretrain = _module("pretrain")
    with pytest.raises(SystemExit) as refused:
        pretrain.word_table(table, str(first), overwrite=False)
    assert "was built from other text" in str(refused.value.code) and "--overwrite" in str(refused.value.code)
    pretrain.word_table(table, str(second), overwrite=False)  # the text it was built from: reused
    assert (table / RUN_SETTINGS).is_file()


def test_pretrain_reuses_a_table_only_of_the_same_text_after_a_build(build, monkeypatch, tmp_path):
    """The builder's own record is what pretrain.py compares: the same text, reused; --max-lines, not."""
    text = tmp_path / "text.txt"
    text.write_text("the cat sat\nthe dog ran\n")
    assert build(tmp_path / "table", text) == 0
    _module("pretrain").word_table(tmp_path / "table", str(text), overwrite=False)
    assert build(tmp_path / "part", text, extra=["--max-lines", "1"]) == 0
    with pytest.raises(SystemExit, match="max_lines"):
        _module("pretrain").word_table(tmp_path / "part", str(text), overwrite=False)
