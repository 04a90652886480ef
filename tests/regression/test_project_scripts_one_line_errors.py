"""Regression: the project's scripts answered a wrong path or option with a traceback (or not at all).

tag_breakdown.py --run NAME=/nope (spaCy's E050), static_vectors.py --weights /nope and
--elmo-model pretrained before any pretraining (WeightsError), train.py --epochs 3 (click's
NoSuchOption): each is now one line naming what is wrong. report.py --metrics on a missing folder
drew the plots and then failed with FileNotFoundError, and on an empty one wrote an empty table
and exited 0: it now fails first, naming the folder. The evaluate step of project.yml read test
and training corpora it did not list as deps, so `spacy project run` did not rerun it when they
changed.
"""
import sys

import pytest
import spacy
import srsly
from spacy.tokens import DocBin

from tests.conftest import tagged_examples
from tests.regression.test_train_script_exit_status_and_settings import SCRIPTS, _script, _status


def _exit(call) -> int:
    with pytest.raises(SystemExit) as exited:
        call()
    return _status(exited.value.code)


def test_tag_breakdown_names_a_pipeline_that_is_not_there(capsys, tmp_path):
    docs = [eg.reference for eg in tagged_examples(spacy.blank("en"))]
    DocBin(docs=docs).to_disk(tmp_path / "test.spacy")
    tag_breakdown = _script("tag_breakdown")
    argv = [str(tmp_path / "test.spacy"), "--train", str(tmp_path / "test.spacy"), "--run", "a=/nope/model"]
    assert _exit(lambda: tag_breakdown.main(argv)) == 1
    assert capsys.readouterr().err.strip() == "--run a=/nope/model: no such pipeline directory"
    (tmp_path / "empty").mkdir()
    argv[-1] = f"a={tmp_path / 'empty'}"
    assert _exit(lambda: tag_breakdown.main(argv)) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"--run a={tmp_path / 'empty'}: cannot load the pipeline ([E053]")


def test_static_vectors_names_a_biLM_that_is_not_there(capsys, tmp_path):
    static_vectors = _script("static_vectors")
    assert _exit(lambda: static_vectors.main([str(tmp_path / "out"), "--weights", "/nope/model"])) == 1
    assert "cannot load the biLM /nope/model: /nope/model: no such directory" in capsys.readouterr().out
    argv = [str(tmp_path / "out"), "--elmo-model", "pretrained", "--pretrained-dir", str(tmp_path / "pretrain")]
    assert _exit(lambda: static_vectors.main(argv)) == 1
    out = capsys.readouterr().out
    assert "cannot load the biLM" in out and "run the `pretrain` step" in out
    assert not (tmp_path / "out").exists()


def test_train_names_an_option_it_does_not_know(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(sys, "argv", ["train.py", "c.cfg", str(tmp_path / "out"), "--train", "t", "--dev", "d",
                                      "--epochs", "3"])
    assert _exit(_script("train").main) == 2
    assert "error: No such option '--epochs'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_report_fails_first_on_a_missing_or_empty_metrics_folder(monkeypatch, capsys, tmp_path):
    report = _script("report")
    for metrics in (tmp_path / "missing_dir", tmp_path / "empty"):
        if metrics.name == "empty":
            metrics.mkdir()
        monkeypatch.setattr(sys, "argv", ["report.py", "--metrics", str(metrics), "--training", str(tmp_path),
                                          "--plots", str(tmp_path / "plots")])
        assert _exit(report.main) == 1
        assert capsys.readouterr().err.startswith(f"--metrics {metrics}: ")
        assert not (tmp_path / "plots").exists() and not (metrics / "comparison.md").exists()


def test_the_evaluate_step_lists_every_corpus_it_reads():
    project = srsly.read_yaml(SCRIPTS.parent / "project.yml")
    evaluate = next(command for command in project["commands"] if command["name"] == "evaluate")
    words = {word.split("=", 1)[-1] for line in evaluate["script"] for word in line.split()}  # NAME=PATH too
    read = {word for word in words if word.startswith(("corpus/", "training/"))}
    assert read == {"corpus/ewt-test.spacy", "corpus/ner-test.spacy", "corpus/ewt-train.spacy"} | {
        f"training/{name}/model-best" for name in ("ewt_baseline", "ewt_baseline_vectors", "ewt_elmo",
                                                   "ewt_elmo_finetuned", "ner_baseline", "ner_elmo")}
    assert read <= set(evaluate["deps"])
