"""Regression: the CoNLL-U check let two malformed columns through to a traceback. An empty (or
whitespace-only) FORM reached spaCy, which stopped with `ValueError [E031]`; a HEAD of `²` passed
`str.isdigit()` and then `int()` raised. `corpus ud` catches only CorpusError, so both were tracebacks.
Now an empty form and a head that is not ASCII digits are a CorpusError naming the file and line."""
import pytest

from spacy_elmo.gold_data import CorpusError, check_conllu, ud_docs

from ..cli.invoke import refused

ROOT = "1\tran\tran\tX\tX\t_\t0\troot\t_\t_\n"


@pytest.mark.parametrize("form", ["", " ", "\u2028"])
def test_an_empty_form_is_one_error(tmp_path, form):
    path = tmp_path / "form.conllu"
    path.write_text(f"# text = x\n{ROOT}2\t{form}\t_\tX\tX\t_\t1\tdep\t_\t_\n\n", encoding="utf-8")
    expected = "line 3: the form (column 2) is empty"
    with pytest.raises(CorpusError, match=r"form.conllu: line 3: the form \(column 2\) is empty"):
        ud_docs(path)
    refused(["corpus", "ud", path, tmp_path / "o.spacy"], expected)
    with pytest.raises(CorpusError, match=r"line 3: the form \(column 2\) is empty"):
        check_conllu(path.read_text(encoding="utf-8"), path, check_heads=False)


def test_the_example_line_of_the_review(tmp_path):
    path = tmp_path / "form.conllu"
    path.write_text("1\t\t_\tX\tX\t_\t0\troot\t_\t_\n\n")
    refused(["corpus", "ud", path, tmp_path / "o.spacy"], "line 1: the form (column 2) is empty")


@pytest.mark.parametrize("head", ["\u00b2", "\u0661", "1\u00b2", "+1", " 1", ""])
def test_a_head_that_is_not_ascii_digits_is_one_error(tmp_path, head):
    path = tmp_path / "head.conllu"
    path.write_text(f"{ROOT}2\tfast\tfast\tX\tX\t_\t{head}\tadvmod\t_\t_\n\n", encoding="utf-8")
    expected = f"line 2: head {head!r} is not a number"
    with pytest.raises(CorpusError, match="head.conllu: " + expected.replace("+", r"\+")):
        ud_docs(path)
    refused(["corpus", "ud", path, tmp_path / "o.spacy"], expected)
    assert not (tmp_path / "o.spacy").exists()
