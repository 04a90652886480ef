"""Regression: scripts/build_word_table.py and the table reader on bad vector files.

- A NaN row, or a value beyond float16's range, in the chosen rows was a traceback ("the vectors are
  not all finite in float16", naming no word) raised after table.json had been deleted: a failed
  rebuild left a complete table incomplete. The table is now checked before anything on disk changes
  (`check_word_table`), and the builder says in one line which words and what to do.
- A rebuild without --spacy-vectors left the previous build's OUT/spacy and OUT/vectors.txt beside
  the new table, so a baseline reading `--paths.vectors OUT/spacy` trained on another table's rows.
  They are removed with the old record.
- A parquet word column of bytes became the words "b'the'"; a choice of no rows wrote an empty
  table; a words.txt that is not UTF-8 was a UnicodeDecodeError from the reader, not a
  WordTableError naming the file.
"""
import json
import sys
from types import SimpleNamespace

import numpy
import pytest

from spacy_elmo.pretrain.word_table import INFO_FILE, WORDS_FILE, WordTableError, load_word_table

from .test_pretrain_data_review_lowercase_table import _script

WORDS = ["the", "bank", "river", "rose"]


@pytest.fixture
def build(tmp_path, monkeypatch):
    """build(out, vectors, *options): the builder on a fake package of WORDS with these vectors."""
    pytest.importorskip("spacy")
    script = _script()
    text = tmp_path / "text.txt"
    text.write_text("the bank of the river rose\n")
    monkeypatch.setattr(sys, "argv", ["build_word_table.py"])

    def run(out, vectors, *options, words=WORDS):
        array = tmp_path / "vectors.npy"
        numpy.save(array, numpy.asarray(vectors, dtype=numpy.float32))
        dist = SimpleNamespace(version="1.0", metadata={})
        monkeypatch.setattr(script, "package_files", lambda package: (array, tmp_path / "words.parquet", dist))
        monkeypatch.setattr(script, "read_words", lambda path: list(words))
        script.main([str(out), "--package", "fake-vectors", "--license", "CC0-1.0", "--text", str(text),
                     "--top-text", "10", "--top-vectors", "10", *options])

    return run


def _good(n_rows=len(WORDS)):
    return numpy.arange(n_rows * 3, dtype=numpy.float32).reshape(n_rows, 3) / 10


@pytest.mark.parametrize("value, advice", [(1e6, "float32")])
def test_a_bad_row_is_one_line_and_the_table_there_stays_whole(build, tmp_path, capsys, value, advice):
    out = tmp_path / "table"
    build(out, _good())
    before = {name: (out / name).read_bytes() for name in (INFO_FILE, WORDS_FILE, "run_settings.json")}
    bad = _good()
    bad[2, 1] = value
    with pytest.raises(SystemExit) as exited:
        build(out, bad)
    assert exited.value.code == 1
    printed = " ".join(capsys.readouterr().out.split())
    assert "'river'" in printed and advice in printed and "Traceback" not in printed
    assert {name: (out / name).read_bytes() for name in before} == before
    load_word_table(out)


def test_a_nan_row_of_the_vector_file_leaves_its_word_out(build, tmp_path, capsys):
    """A second review: a NaN row blocked the build, and the advice ("leave those words out") named
    nothing the script could do. Such rows are now skipped as words without a vector, counted in
    table.json and named in a warning."""
    bad = _good()
    bad[2, 1] = float("nan")
    out = tmp_path / "table"
    build(out, bad)
    assert "'river'" in " ".join(capsys.readouterr().out.split())
    vocab, vectors = load_word_table(out)
    assert "river" not in vocab.words and vocab.words[:3] == ["the", "bank", "rose"]
    assert numpy.isfinite(vectors.numpy()).all()
    assert json.loads((out / INFO_FILE).read_text())["source"]["vector_file_rows_not_finite"] == 1


def test_nan_and_overflow_rows_each_get_their_own_advice():
    from spacy_elmo.pretrain.word_table import check_word_table

    vectors = _good()
    vectors[1, 0], vectors[3, 2] = float("nan"), 1e6
    with pytest.raises(ValueError) as caught:
        check_word_table(WORDS, vectors)
    message = str(caught.value)
    assert "'bank', hold NaN" in message and "'rose', have values beyond float16" in message


def test_a_rebuild_removes_the_spacy_vectors_of_the_table_it_replaces(build, tmp_path):
    out = tmp_path / "table"
    build(out, _good(), "--spacy-vectors")
    assert (out / "spacy").is_dir() and (out / "vectors.txt").is_file()
    build(out, _good() * 2)
    assert not (out / "spacy").exists() and not (out / "vectors.txt").exists()


def test_no_rows_chosen_is_refused(build, tmp_path, capsys):
    with pytest.raises(SystemExit):
        build(tmp_path / "table", _good(2), "--top-vectors", "0", words=["alpha", "beta"])
    assert "no row chosen" in capsys.readouterr().out
    assert not (tmp_path / "table" / INFO_FILE).exists()


def test_a_bytes_word_column_is_decoded(tmp_path):
    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "words.parquet"
    pq.write_table(pyarrow.table({"word": pyarrow.array([b"the", "café".encode()], type=pyarrow.binary())}), path)
    assert _script().read_words(path) == ["the", "café"]


def test_a_word_list_that_is_not_utf8_is_a_word_table_error(build, tmp_path):
    out = tmp_path / "table"
    build(out, _good())
    info = json.loads((out / INFO_FILE).read_text())
    (out / WORDS_FILE).write_bytes(b"the\nb\xffnk\nriver\nrose\n")
    info.pop("sha256", None)
    info.pop("files", None)
    (out / INFO_FILE).write_text(json.dumps(info))
    with pytest.raises(WordTableError, match=f"{WORDS_FILE}: not a readable UTF-8 word list"):
        load_word_table(out)
