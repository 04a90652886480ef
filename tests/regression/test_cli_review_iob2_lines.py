"""Regression: the Universal NER reader gave spaCy's [E031] traceback for a line with an empty word
(`1<TAB><TAB>O`), and split lines with `str.splitlines`, which also splits at U+0085, U+2028 and
form feeds: a word holding one was refused as a malformed line, and every later error named the wrong
line. Lines now end at "\\n" only, as the CoNLL-U reader's do, and an empty word is a CorpusError
naming its line."""
import pytest

from spacy_elmo.cli import app
from spacy_elmo.gold_data import CorpusError, uner_docs

from ..cli.invoke import refused, runner


def test_an_empty_word_names_its_line(tmp_path):
    path = tmp_path / "e.iob2"
    path.write_text("# s\n1\tJohn\tB-PER\n\n1\t\tO\n")
    with pytest.raises(CorpusError, match=r"e.iob2: line 4: the word \(column 2\) is empty"):
        uner_docs(path)
    refused(["corpus", "ner", path, tmp_path / "o.spacy"], "line 4: the word (column 2) is empty")
    assert not (tmp_path / "o.spacy").exists()


@pytest.mark.parametrize("separator", ["\u2028", "\u0085", "\x0c", "\x1c"])
def test_a_word_may_hold_what_splitlines_splits_at(tmp_path, separator):
    word = f"a{separator}b"
    path = tmp_path / "w.iob2"
    path.write_text(f"1\t{word}\tB-ORG\n2\tleft\tO\n\n1\tthen\tO\n2\tx\tBAD\n", encoding="utf-8", newline="")
    # the bad tag is on line 5 of the file, whatever the word before holds
    with pytest.raises(CorpusError, match="line 5: tag 'BAD' is not IOB2"):
        uner_docs(path)
    path.write_text(f"1\t{word}\tB-ORG\r\n2\tleft\tO\r\n", encoding="utf-8", newline="")
    (doc,) = uner_docs(path)
    assert [t.text for t in doc] == [word, "left"]
    assert [(e.text, e.label_) for e in doc.ents] == [(word, "ORG")]
    result = runner.invoke(app, ["corpus", "ner", str(path), str(tmp_path / "o.spacy")])
    assert result.exit_code == 0, result.output
