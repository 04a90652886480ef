"""Regression: a second review of the commands and project scripts (2026-12-07, fourteenth session).

- adapt.py --overwrite deleted the finished adaptation before it checked the overrides and the texts:
  a typo with --vars.overwrite true cost the run. Everything is checked first now.
- `evaluate` of a pipeline with a parser on data without its annotation (NER docs) exited 0 with a
  table of nulls: the parser's sentence scores (0.0) counted as scored.
- finetune.py trained with --learn-rate -1 (gradient ascent) and exited 0.
- gpu_pretrain.py dropped unknown options of `prepare` and `join` (a typo wasted the GPU slot), its
  printed device call left out --config and asked for more than the device's 600 s, and `join`
  without a manifest was a traceback.
- tag_breakdown.py with --batch-size 0 blamed the data, with an --output directory failed after all
  the tagging, and scored a pipeline without a tagger as 0.00.
- retokenize.py read its --report corpora after writing OUTPUT, so a bad one left an output that
  the rerun refused; `corpus` took a directory for a missing file, and ignored --dev-fraction 5
  without --dev-output.
"""
import subprocess
import sys

import pytest
import spacy
from spacy.tokens import Doc, DocBin, Span

from spacy_elmo.cli import app

from ..cli.invoke import refused, runner
from .test_train_script_exit_status_and_settings import SCRIPTS, _script


def _run(script, *args, timeout=300):
    return subprocess.run([sys.executable, str(SCRIPTS / script), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def _docbin(path, docs):
    DocBin(docs=docs).to_disk(path)
    return path


def test_adapt_checks_everything_before_overwrite_deletes(tmp_path):
    output = tmp_path / "adapted"
    output.mkdir()
    (output / "checkpoint.pt").write_bytes(b"a finished run's files")
    text = tmp_path / "train.txt"
    text.write_text("a line of text\n", encoding="utf-8")
    for args, expected in (([text, text, "--ouput", "elsewhere"], "--ouput"),
                           ([tmp_path / "missing.spacy", text], "--train")):
        done = _run("adapt.py", "--train", args[0], "--dev", args[1], "--output", output, "--overwrite", *args[2:])
        assert done.returncode == 2 and expected in done.stderr, done.stderr[-2000:]
        assert (output / "checkpoint.pt").read_bytes() == b"a finished run's files"


def test_evaluate_refuses_a_parser_on_data_without_its_annotation(tmp_path):
    from spacy.training import Example

    nlp = spacy.blank("en")
    nlp.add_pipe("parser")
    gold = Doc(nlp.vocab, words=["I", "saw", "it"], heads=[1, 1, 1], deps=["nsubj", "ROOT", "dobj"])
    nlp.initialize(lambda: [Example(nlp.make_doc(gold.text), gold)])
    nlp.to_disk(tmp_path / "parser")
    # as `corpus ner` writes them: sentence starts set, so the parser's sentence scores are 0.0, not None
    ner_doc = Doc(nlp.vocab, words=["John", "sat", "in", "Paris"], sent_starts=[True, False, False, False])
    ner_doc.ents = [Span(ner_doc, 0, 1, "PER"), Span(ner_doc, 3, 4, "LOC")]
    data = _docbin(tmp_path / "ner.spacy", [ner_doc])
    refused(["evaluate", tmp_path / "parser", data], "nothing to score")


def test_evaluate_counts_the_sentence_scores_of_a_sentencizer(tmp_path):
    """A second look: the parser's by-product is not counted, but a sentencizer's (its task) is."""
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("ner")
    gold = Doc(nlp.vocab, words=["Hi", ".", "Bye", "."], sent_starts=[True, False, True, False])
    from spacy.training import Example

    nlp.initialize(lambda: [Example(nlp.make_doc(gold.text), gold)])
    nlp.to_disk(tmp_path / "pipeline")
    data = _docbin(tmp_path / "sentences.spacy", [gold])
    result = runner.invoke(app, ["evaluate", str(tmp_path / "pipeline"), str(data), "--output",
                                 str(tmp_path / "scores.json")])
    assert result.exit_code == 0, result.output


def test_finetune_refuses_a_learning_rate_not_above_zero(tmp_path):
    for rate in ("-1", "0", "nan"):
        done = _run("finetune.py", tmp_path / "no-pipeline", tmp_path / "out", "--train", "t", "--dev", "d",
                    "--learn-rate", rate)
        assert done.returncode == 2 and "--learn-rate must be a number above 0" in done.stderr


def test_gpu_pretrain_refuses_typos_long_calls_and_a_folder_without_a_manifest(tmp_path, capsys, monkeypatch):
    script = _script("gpu_pretrain")
    for argv, expected in ((["join", str(tmp_path), str(tmp_path / "m"), "--forse"], "--forse"),
                           (["prepare", "--wordtable", "x"], "--wordtable"),
                           (["prepare", "--minutes", "8"], "--minutes must be above 0 and at most 6")):
        monkeypatch.setattr(sys, "argv", ["gpu_pretrain.py", *argv])
        with pytest.raises(SystemExit) as exited:
            script.main()
        assert exited.value.code == 2 and expected in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["gpu_pretrain.py", "join", str(tmp_path), str(tmp_path / "m")])
    with pytest.raises(SystemExit, match="no manifest.json"):
        script.main()


def test_gpu_pretrain_prints_the_config_it_prepared_for(tmp_path, monkeypatch, capsys):
    script = _script("gpu_pretrain")
    for name in ("tokenize_texts", "requirements"):
        monkeypatch.setattr(script, name, lambda *args, **kwargs: [])
    monkeypatch.setattr(script.subprocess, "run", lambda *args, **kwargs: None)
    monkeypatch.setattr(script, "fit_text", lambda path, budget: 3)
    monkeypatch.setattr(script, "checkout_bytes", lambda: 0)
    monkeypatch.setattr(script, "TEXTS", {"train.txt.gz": "train.txt.gz"})
    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    (work / "data" / "train.txt.gz").write_bytes(b"x")
    monkeypatch.setattr(sys, "argv", ["gpu_pretrain.py", "prepare", "--work", str(work), "--config",
                                      str(SCRIPTS.parent / "configs" / "pretrain_tiny.cfg"), "--minutes", "6"])
    script.main()
    printed = capsys.readouterr().out
    assert "--config configs/pretrain_tiny.cfg" in printed and "timeout_s=600" in printed


def test_tag_breakdown_refuses_bad_options_and_a_pipeline_without_tags(tmp_path, capsys):
    script = _script("tag_breakdown")
    nlp = spacy.blank("en")
    doc = Doc(nlp.vocab, words=["the", "cat"], pos=["DET", "NOUN"])
    data = _docbin(tmp_path / "gold.spacy", [doc])
    nlp.to_disk(tmp_path / "no-tagger")
    common = [str(data), "--train", str(data), "--run", f"base={tmp_path / 'no-tagger'}"]
    for extra, expected in ((["--batch-size", "0"], "--batch-size must be 1 or more"),
                            (["--output", str(tmp_path)], "is a directory")):
        with pytest.raises(SystemExit) as exited:
            script.main(common + extra)
        assert exited.value.code == 2 and expected in capsys.readouterr().err
    with pytest.raises(SystemExit, match="predicts no pos"):
        script.main(common)


def test_retokenize_reads_its_reports_before_writing(tmp_path, capsys):
    nlp = spacy.blank("en")
    nlp.to_disk(tmp_path / "pipeline")
    train = _docbin(tmp_path / "train.spacy", [Doc(nlp.vocab, words=["e-mail", "me"])])
    bad = tmp_path / "bad.spacy"
    bad.write_text("not a DocBin", encoding="utf-8")
    with pytest.raises(SystemExit):
        _script("retokenize").main([str(tmp_path / "pipeline"), str(tmp_path / "out"), "--train", str(train),
                                    "--report", str(bad)])
    assert not (tmp_path / "out").exists()


def test_retokenize_reports_every_repeated_report(tmp_path, capsys):
    """The docs' review: --report given twice kept only the second."""
    nlp = spacy.blank("en")
    nlp.to_disk(tmp_path / "pipeline")
    train = _docbin(tmp_path / "train.spacy", [Doc(nlp.vocab, words=["e-mail", "me"])])
    other = _docbin(tmp_path / "other.spacy", [Doc(nlp.vocab, words=["call", "me"])])
    _script("retokenize").main([str(tmp_path / "pipeline"), str(tmp_path / "out"), "--train", str(train),
                                "--report", str(train), "--report", str(other)])
    printed = " ".join(capsys.readouterr().out.split())  # wasabi wraps long lines
    assert "train.spacy: gold tokens found" in printed and "other.spacy: gold tokens found" in printed


def test_corpus_names_a_directory_and_checks_the_dev_fraction(tmp_path):
    refused(["corpus", "ud", tmp_path, tmp_path / "out.spacy"], "a directory; name the corpus file")
    conllu = tmp_path / "in.conllu"
    conllu.write_text("1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_\n\n", encoding="utf-8")
    refused(["corpus", "ud", conllu, tmp_path / "out.spacy", "--dev-fraction", "5"], "--dev-fraction must be")
    assert not (tmp_path / "out.spacy").exists()
