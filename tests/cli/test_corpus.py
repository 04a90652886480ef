"""`corpus ud` and `corpus ner`: good files convert; bad input (truncated, binary, not UTF-8, not IOB2)
is one clear message, exit code 1, no traceback, nothing written."""
import gzip

import pytest

from spacy_elmo.cli import app

from .invoke import ELF_HEADER, refused, runner


CONLLU = (
    "# text = The cat sat .\n"
    "1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\n"
    "2\tcat\tcat\tNOUN\tNN\t_\t3\tnsubj\t_\t_\n"
    "3\tsat\tsit\tVERB\tVBD\t_\t0\troot\t_\t_\n"
    "4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_\n"
    "\n"
)


def test_corpus_ud_reads_a_good_file(tmp_path):
    (tmp_path / "good.conllu").write_text(CONLLU * 3)
    result = runner.invoke(app, ["corpus", "ud", str(tmp_path / "good.conllu"), str(tmp_path / "o.spacy")])
    assert result.exit_code == 0, result.output


LINES = CONLLU.splitlines(keepends=True)


@pytest.mark.parametrize("cut,expected", [
    # cut inside line 15 (the third sentence's second word)
    (CONLLU * 2 + "".join(LINES[:2]) + LINES[2][:12],
     "line 15: expected 10 tab-separated columns (CoNLL-U), found 4 (a truncated file?)"),
    # cut after line 14: the third sentence's one word points at a word that is gone
    (CONLLU * 2 + "".join(LINES[:2]), "line 14: head 2 points past the sentence's 1 words (a truncated file?)"),
])
def test_corpus_ud_truncated_file(tmp_path, cut, expected):
    path = tmp_path / "cut.conllu"
    path.write_text(cut)
    refused(["corpus", "ud", path, tmp_path / "o.spacy"], expected)
    assert not (tmp_path / "o.spacy").exists()


def test_corpus_ud_truncated_gzip(tmp_path):
    data = gzip.compress((CONLLU * 200).encode())
    path = tmp_path / "cut.conllu.gz"
    path.write_bytes(data[: len(data) // 2])
    refused(["corpus", "ud", path, tmp_path / "o.spacy"], "not a complete gzip file", "truncated")


def test_corpus_ud_binary_and_undecodable_files(tmp_path):
    (tmp_path / "bin.conllu").write_bytes(ELF_HEADER * 20)
    refused(["corpus", "ud", tmp_path / "bin.conllu", tmp_path / "o.spacy"], "line 1 holds a NUL byte: a binary file")
    (tmp_path / "latin1.conllu").write_bytes(CONLLU.encode() + "5\tcaf\xe9".encode("latin-1"))
    refused(["corpus", "ud", tmp_path / "latin1.conllu", tmp_path / "o.spacy"], "line 7 is not valid UTF-8")


def test_corpus_ner_on_a_file_that_is_not_iob(tmp_path):
    (tmp_path / "ud.conllu").write_text(CONLLU)
    refused(["corpus", "ner", tmp_path / "ud.conllu", tmp_path / "o.spacy"],
            "line 2: tag 'the' is not IOB2 (O, B-TYPE or I-TYPE)")
    (tmp_path / "plain.txt").write_text("Just a sentence of plain text .\nAnother one .\n")
    refused(["corpus", "ner", tmp_path / "plain.txt", tmp_path / "o.spacy"], "line 1: expected INDEX<TAB>WORD<TAB>TAG")
    assert not (tmp_path / "o.spacy").exists()


def test_corpus_ner_reads_iob2(tmp_path):
    (tmp_path / "ok.iob2").write_text("# sent\n1\tJohn\tB-PER\t-\t-\n2\tSmith\tI-PER\t-\t-\n3\tleft\tO\t-\t-\n\n")
    result = runner.invoke(app, ["corpus", "ner", str(tmp_path / "ok.iob2"), str(tmp_path / "o.spacy"), "-n", "1"])
    assert result.exit_code == 0, result.output
    from spacy.tokens import DocBin
    from spacy.vocab import Vocab

    (doc,) = DocBin().from_disk(tmp_path / "o.spacy").get_docs(Vocab())
    assert [(e.text, e.label_) for e in doc.ents] == [("John Smith", "PER")]


def test_a_shuffled_dev_split_draws_whole_docs_from_the_whole_file_by_seed(tmp_path):
    """`--dev-split shuffled`: UNER's dev file is ordered by genre, so its last docs are one genre."""
    from spacy.tokens import DocBin
    from spacy.vocab import Vocab

    path = tmp_path / "in.iob2"
    path.write_text("".join(f"1\tword{i}\tB-PER\t-\t-\n2\tleft\tO\t-\t-\n\n" for i in range(20)))

    def split(*args):
        result = runner.invoke(app, ["corpus", "ner", str(path), str(tmp_path / "t.spacy"), "-n", "1",
                                     "--dev-output", str(tmp_path / "d.spacy"), "--dev-fraction", "0.25", *args])
        assert result.exit_code == 0, result.output

        def words(name):
            return [doc[0].text for doc in DocBin().from_disk(tmp_path / name).get_docs(Vocab())]
        return words("t.spacy"), words("d.spacy")

    train, dev = split()
    assert dev == [f"word{i}" for i in range(15, 20)]  # the default: the file's last docs
    train, dev = split("--dev-split", "shuffled", "--seed", "1")
    assert len(dev) == 5 and sorted(train + dev, key=lambda w: int(w[4:])) == [f"word{i}" for i in range(20)]
    assert dev != [f"word{i}" for i in range(15, 20)] and dev == sorted(dev, key=lambda w: int(w[4:]))
    assert split("--dev-split", "shuffled", "--seed", "1") == (train, dev)  # the seed decides
    assert split("--dev-split", "shuffled", "--seed", "2")[1] != dev
    refused(["corpus", "ner", path, tmp_path / "o.spacy", "--dev-output", tmp_path / "x.spacy",
             "--dev-split", "random"], "--dev-split must be one of ('last', 'shuffled'), got 'random'")
