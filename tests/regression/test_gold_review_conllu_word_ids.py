"""Regression: the CoNLL-U check did not look at the order of word IDs. Two sentences without the blank
line between them ("I ran ." IDs 1-3, then "You sat" IDs 1-2) converted with exit status 0 as one
sentence with a broken tree (heads pointing into the wrong sentence, a ROOT label on a word with a
head), and a word ID 0 was accepted. Word IDs must now run 1, 2, 3, ... within a sentence (a
multi-word token range must start at the next word ID, an empty node N.M must follow word N); the
first line that breaks this is a CorpusError naming the file and line, and an ID that starts again at
1 asks whether a blank line is missing."""
import pytest

from spacy_elmo.gold_data import CorpusError, check_conllu, ud_docs

from ..cli.invoke import refused


def _line(word_id: str, form: str, head: str, dep: str) -> str:
    return f"{word_id}\t{form}\t{form.lower()}\tX\tX\t_\t{head}\t{dep}\t_\t_\n"


I_RAN = _line("1", "I", "2", "nsubj") + _line("2", "ran", "0", "root") + _line("3", ".", "2", "punct")
YOU_SAT = _line("1", "You", "2", "nsubj") + _line("2", "sat", "0", "root")


def test_a_missing_blank_line_between_sentences_is_one_error(tmp_path):
    path = tmp_path / "joined.conllu"
    path.write_text("# text = I ran .\n" + I_RAN + "# text = You sat\n" + YOU_SAT + "\n")
    expected = "line 6: word ID 1 follows word 3: missing blank line between sentences?"
    with pytest.raises(CorpusError, match=f"joined.conllu: {expected}"):
        ud_docs(path, n_sents=1)
    refused(["corpus", "ud", path, tmp_path / "o.spacy"], expected)
    assert not (tmp_path / "o.spacy").exists()
    # the reader of word forms alone (embedding: no heads checked) refuses it too
    with pytest.raises(CorpusError, match=expected):
        check_conllu(path.read_text(), path, check_heads=False)


@pytest.mark.parametrize("lines, line, message", [
    (_line("0", "I", "0", "root"), 1, "word ID 0: expected 1"),
    (_line("1", "I", "0", "root") + _line("3", "ran", "1", "dep"), 2, "word ID 3 follows word 1: expected 2"),
    (_line("1", "I", "0", "root") + _line("1", "ran", "1", "dep"), 2, "word ID 1 follows word 1: missing blank line"),
    (_line("2-3", "Don't", "_", "_") + _line("1", "Do", "0", "root"), 1, "range 2-3: expected one starting at 1"),
    (_line("1-1", "Do", "_", "_") + _line("1", "Do", "0", "root"), 1, "range 1-1 does not end after it starts"),
    (_line("1-2", "Don't", "_", "_") + _line("1", "Do", "0", "root"), 1, "range 1-2 ends past the sentence's 1 words"),
    (_line("1-3", "a", "_", "_") + _line("1", "a", "0", "root") + _line("2-3", "b", "_", "_"), 3,
     "range 2-3 overlaps the range 1-3 on line 1"),
    (_line("1", "I", "0", "root") + _line("2.1", "ran", "_", "_"), 2, "empty node 2.1 follows word 1: expected 1.1"),
    (_line("1", "I", "0", "root") + _line("1.0", "ran", "_", "_"), 2, "empty node 1.0 follows word 1: expected 1.1"),
])
def test_word_ids_out_of_order_name_their_line(tmp_path, lines, line, message):
    path = tmp_path / "ids.conllu"
    path.write_text(lines + "\n")
    with pytest.raises(CorpusError, match=f"ids.conllu: line {line}: {message}"):
        ud_docs(path)


def test_ranges_and_empty_nodes_in_order_still_convert(tmp_path):
    sentence = (
        _line("0.1", "Well", "_", "_")
        + _line("1-2", "Don't", "_", "_") + _line("1", "Do", "3", "aux") + _line("2", "n't", "3", "advmod")
        + _line("3", "go", "0", "root") + _line("3.1", "go", "_", "_") + _line("3.2", "went", "_", "_")
        + _line("4", ".", "3", "punct")
    )
    path = tmp_path / "mwt.conllu"
    path.write_text((sentence + "\n") * 2)
    docs = ud_docs(path, n_sents=2)
    assert [[(t.text, t.head.i, t.dep_) for t in doc] for doc in docs] == [
        [("Do", 2, "aux"), ("n't", 2, "advmod"), ("go", 2, "ROOT"), (".", 2, "punct")]
        + [("Do", 6, "aux"), ("n't", 6, "advmod"), ("go", 6, "ROOT"), (".", 6, "punct")]
    ]
