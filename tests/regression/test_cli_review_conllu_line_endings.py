"""Regression: `corpus ud` on a CoNLL-U file with Windows line endings ("\\r\\n") was a long traceback
("not enough values to unpack"), and so were an empty file and one of comments only (IndexError):
the check read the file's lines without their "\\r", but spaCy's converter and the --limit split
(at "\\n\\n") got the raw text. Both now get the same lines the check read, one sentence's token lines
apart from the next's by one empty line: a CRLF file converts as its LF twin does, and a file
without token lines gives no docs ("no sentences found", exit status 1)."""
import pytest
from spacy.tokens import DocBin
from spacy.vocab import Vocab

from spacy_elmo.cli import app
from spacy_elmo.gold_data import CorpusError, ud_docs

from ..cli.invoke import refused, runner

SENTENCE = (
    "# sent_id = {n}\n"
    "# text = The cat sat .\n"
    "1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\n"
    "2\tcat\tcat\tNOUN\tNN\tNumber=Sing\t3\tnsubj\t_\t_\n"
    "3\tsat\tsit\tVERB\tVBD\t_\t0\troot\t_\t_\n"
    "4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_\n"
    "\n"
)
LF = "".join(SENTENCE.format(n=n) for n in range(5))


def _annotations(docs):
    return [[(t.text, t.tag_, t.pos_, str(t.morph), t.head.i, t.dep_, t.is_sent_start) for t in d] for d in docs]


@pytest.mark.parametrize("limit", [0, 3])
def test_a_crlf_file_gives_the_docs_of_its_lf_twin(tmp_path, limit):
    (tmp_path / "lf.conllu").write_bytes(LF.encode())
    (tmp_path / "crlf.conllu").write_bytes(LF.replace("\n", "\r\n").encode())
    expected = _annotations(ud_docs(tmp_path / "lf.conllu", n_sents=2, limit=limit))
    assert len(expected) == (2 if limit else 3)
    assert _annotations(ud_docs(tmp_path / "crlf.conllu", n_sents=2, limit=limit)) == expected

    out = tmp_path / "crlf.spacy"
    result = runner.invoke(app, ["corpus", "ud", str(tmp_path / "crlf.conllu"), str(out), "-n", "2"])
    assert result.exit_code == 0, result.output
    assert _annotations(DocBin().from_disk(out).get_docs(Vocab())) == _annotations(
        ud_docs(tmp_path / "lf.conllu", n_sents=2))


def test_runs_of_empty_lines_and_comment_blocks_are_no_sentences(tmp_path):
    messy = "# newdoc id = a\n\n\n" + SENTENCE.format(n=0) + "\n  \n# a comment block\n\n" + SENTENCE.format(n=1)
    (tmp_path / "messy.conllu").write_text(messy)
    docs = ud_docs(tmp_path / "messy.conllu", n_sents=1)
    assert [[t.text for t in d] for d in docs] == [["The", "cat", "sat", "."]] * 2
    assert [len(d) for d in ud_docs(tmp_path / "messy.conllu", n_sents=1, limit=1)] == [4]


@pytest.mark.parametrize("text", ["", "\n\n", "# only\n# comments\n", "# a\r\n\r\n# b\r\n"])
def test_a_file_without_token_lines_gives_no_docs(tmp_path, text):
    path = tmp_path / "none.conllu"
    path.write_text(text, newline="")
    assert ud_docs(path) == []
    refused(["corpus", "ud", path, tmp_path / "o.spacy"], "none.conllu: no sentences found")
    assert not (tmp_path / "o.spacy").exists()


def test_errors_still_name_the_line_of_the_file(tmp_path):
    # line numbers are the file's own, blank lines and comment blocks counted
    broken = "# c\n\n\n" + SENTENCE.format(n=0).replace("3\tsat\tsit", "3\tsat sit", 1)
    (tmp_path / "b.conllu").write_text(broken.replace("\n", "\r\n"), newline="")
    with pytest.raises(CorpusError, match="line 8: expected 10 tab-separated columns"):
        ud_docs(tmp_path / "b.conllu")
