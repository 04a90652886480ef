"""Regression: commands that wrote over their input or their other output, and scripts that showed
tracebacks for user errors (a code review, 2026-12-07).

- `corpus` with --dev-output equal to the output wrote the held-out docs and then the training docs
  over them ("Wrote ... held-out docs", exit 0); with the output equal to the input it replaced the
  input; `evaluate -o GOLD` replaced the gold file with the scores. All are refused before any work.
- A `corpus` write that failed (the output a directory) showed a traceback and left the held-out
  file of the failed run; an output not named .spacy was written, and spaCy's reader reads nothing
  from it.
- `corpus ner` joined two sentences when the blank line between them was missing (CoNLL-U's reader
  refuses it), and `--limit` still checked every line of the file.
- `build_word_table.py --max-lines -1` ended in an islice traceback (negative --top-* only after the
  whole text was counted); `retokenize.py` showed spaCy's tracebacks for a corpus or a pipeline that
  does not load; `static_vectors.py --weights embedded` did not know the name every command knows.
"""
import hashlib
import sys
from pathlib import Path

import pytest

from spacy_elmo.gold_data import CorpusError, uner_docs

from ..cli.invoke import refused, runner
from ..cli.test_corpus import CONLLU
from .test_train_script_exit_status_and_settings import _script

IOB2 = "1\tJohn\tB-PER\n2\tsat\tO\n\n1\tin\tO\n2\tParis\tB-LOC\n\n"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def conllu(tmp_path):
    path = tmp_path / "in.conllu"
    path.write_text(CONLLU * 4, encoding="utf-8")
    return path


def test_corpus_refuses_outputs_that_are_one_file_or_the_input(conllu, tmp_path):
    out = tmp_path / "out.spacy"
    refused(["corpus", "ud", conllu, out, "-n", "1", "--dev-output", out], "both the output and --dev-output")
    assert not out.exists()
    before = _digest(conllu)
    copy = tmp_path / "in.spacy"
    copy.write_bytes(conllu.read_bytes())
    refused(["corpus", "ud", copy, copy], "is the input file")
    assert _digest(copy) == before
    refused(["corpus", "ud", conllu, tmp_path / "out.bin"], "must be a .spacy file")


def test_a_directory_in_an_outputs_place_is_one_message_and_writes_nothing(conllu, tmp_path):
    (tmp_path / "adir.spacy").mkdir()
    dev = tmp_path / "dev.spacy"
    refused(["corpus", "ud", conllu, tmp_path / "adir.spacy", "-n", "1", "--dev-output", dev], "is a directory")
    assert not dev.exists()


def test_a_failed_second_write_removes_the_first(conllu, tmp_path, monkeypatch):
    from spacy_elmo import gold_data

    real, calls = gold_data.write_docbin, []

    def full_disk_on_second(docs, output):
        calls.append(output)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(docs, output)

    monkeypatch.setattr(gold_data, "write_docbin", full_disk_on_second)
    out, dev = tmp_path / "out.spacy", tmp_path / "dev.spacy"
    refused(["corpus", "ud", conllu, out, "-n", "1", "--dev-output", dev], "No space left", "nothing was written")
    assert not out.exists() and not dev.exists()


def test_evaluate_refuses_to_write_the_scores_over_the_gold_data(conllu, tmp_path):
    gold = tmp_path / "gold.spacy"
    assert runner.invoke(__import__("spacy_elmo.cli", fromlist=["app"]).app,
                         ["corpus", "ud", str(conllu), str(gold)]).exit_code == 0
    before = _digest(gold)
    refused(["evaluate", "not-loaded", gold, "-o", gold], "is the gold data file")
    assert _digest(gold) == before


def test_an_iob2_file_missing_a_blank_line_is_refused(tmp_path):
    path = tmp_path / "joined.iob2"
    path.write_text(IOB2.replace("O\n\n1\tin", "O\n1\tin"), encoding="utf-8")
    with pytest.raises(CorpusError, match="line 3: index 1 follows word 2: missing blank line"):
        uner_docs(path, n_sents=1)
    path.write_text(IOB2, encoding="utf-8")
    assert [len(doc) for doc in uner_docs(path, n_sents=1)] == [2, 2]


def test_iob2_limit_reads_only_the_sentences_it_keeps(tmp_path):
    path = tmp_path / "late.iob2"
    path.write_text(IOB2 + "1\tbad\tBOGUS\n\n", encoding="utf-8")
    assert len(uner_docs(path, n_sents=1, limit=2)) == 2
    with pytest.raises(CorpusError, match="BOGUS"):
        uner_docs(path, n_sents=1)


@pytest.mark.parametrize("option", ["--max-lines", "--top-text", "--top-vectors"])
def test_build_word_table_refuses_a_negative_count_at_once(tmp_path, option, capsys):
    with pytest.raises(SystemExit) as exited:
        _script("build_word_table").main([str(tmp_path / "table"), option, "-1"])
    assert exited.value.code == 2 and f"{option} must be 0 or more" in capsys.readouterr().err


def test_retokenize_says_in_one_line_what_does_not_load(tmp_path, capsys):
    not_a_pipeline = tmp_path / "empty"
    not_a_pipeline.mkdir()
    train = tmp_path / "train.spacy"
    train.write_text("not a DocBin", encoding="utf-8")
    with pytest.raises(SystemExit) as exited:
        _script("retokenize").main([str(not_a_pipeline), str(tmp_path / "out"), "--train", str(train)])
    out = capsys.readouterr().out
    assert exited.value.code == 1 and "not a spaCy pipeline that loads" in out and "Traceback" not in out


def test_static_vectors_knows_the_embedded_name(tmp_path, monkeypatch):
    module = _script("static_vectors")
    seen = []
    monkeypatch.setattr("spacy_elmo.io.load_model", lambda source=None, **kw: seen.append(source) or sys.exit(9))
    with pytest.raises(SystemExit):
        module.main([str(tmp_path / "vectors"), "--weights", "embedded"])
    assert seen == [None]  # the loaders' name for the package's own biLM
