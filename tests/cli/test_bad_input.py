"""Bad input on the command line: one clear message, exit code 1, no traceback, nothing written."""
import gzip

import h5py
import pytest
from typer.testing import CliRunner

from spacy_elmo.cli import app

runner = CliRunner()
ELF_HEADER = b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00>\x00"


def refused(args, *expected):
    """The command fails cleanly, and its one message says each of `expected`."""
    result = runner.invoke(app, [str(a) for a in args])
    text = " ".join(result.output.split())
    assert result.exit_code == 1, text
    assert isinstance(result.exception, SystemExit), result.exception  # typer.Exit, not a crash
    assert "Traceback" not in result.output
    for part in expected:
        assert part in text, (part, text)
    return text


# -- embed -------------------------------------------------------------------------------


def test_embed_into_a_missing_directory(allennlp_dir, tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("hello world\n")
    refused(["embed", text, tmp_path / "missing" / "dir" / "out.h5", "--weights", allennlp_dir, "-q"],
            "missing/dir: no such directory")
    assert not (tmp_path / "missing").exists()


def test_embed_invalid_utf8_names_the_line_and_replace_reads_on(allennlp_dir, tmp_path):
    text = tmp_path / "in.txt"
    text.write_bytes(b"hello world\nnaive caf\xe9 au lait\nlast line\n")
    out = tmp_path / "out.h5"
    refused(["embed", text, out, "--weights", allennlp_dir, "-q"],
            "line 2 (column 10)", "0xe9, not UTF-8", "--encoding-errors replace")
    assert not out.exists() and not out.with_name("out.h5.partial").exists()
    result = runner.invoke(app, ["embed", str(text), str(out), "--weights", str(allennlp_dir), "-q",
                                 "--encoding-errors", "replace"])
    assert result.exit_code == 0, result.output
    with h5py.File(out, "r") as f:
        assert f["1"].shape[1] == 4 and f.attrs["status"] == "complete"


def test_embed_binary_file(allennlp_dir, tmp_path):
    binary = tmp_path / "program"
    binary.write_bytes(ELF_HEADER * 50)
    refused(["embed", binary, tmp_path / "out.h5", "--weights", allennlp_dir, "-q"], "line 1",
            "NUL byte (a binary file?)")


@pytest.mark.parametrize("args,expected", [
    (["--layers", "weighted"], "--layers weighted needs --layer-weights"),
    (["--layers", "weighted", "--layer-weights", "1"], "--layer-weights: 3 comma-separated weights"),
    (["--layers", "weighted", "--layer-weights", "a,b,c"], "--layer-weights must be comma-separated numbers"),
    (["--layers", "mix", "--mix", "1"], "--layer-weights: 3 comma-separated weights"),
    (["--layers", "mix", "--mix", "x"], "--layer-weights must be comma-separated numbers"),
    (["--layers", "weighted", "--mix", "1,0,0", "--layer-weights", "1,0,0"], "pass --layer-weights only"),
])
def test_embed_bad_layer_weights_name_the_option(allennlp_dir, tmp_path, args, expected):
    text = tmp_path / "in.txt"
    text.write_text("hello world\n")
    refused(["embed", text, tmp_path / "o.h5", "--weights", allennlp_dir, "-q", *args], expected)
    assert not (tmp_path / "o.h5").exists() and not (tmp_path / "o.h5.partial").exists()


def test_embed_unknown_encoding_errors_mode(allennlp_dir, tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("fine\n")
    refused(["embed", text, tmp_path / "o.h5", "--weights", allennlp_dir, "--encoding-errors", "ignore"],
            "unknown encoding error handling 'ignore'")


# -- corpus ------------------------------------------------------------------------------

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
