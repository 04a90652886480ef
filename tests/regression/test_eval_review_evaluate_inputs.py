"""Regression: `evaluate` answered three kinds of input with a traceback or a misleading result.

A pipeline that spaCy cannot load for a reason other than a missing directory (a config.cfg that
does not parse, a component file cut short, a `lang` spaCy lacks: ValueError or ImportError) was a
traceback; a good DocBin not named *.spacy (dev.bin) was "no documents", since spaCy's Corpus reads
only .spacy names; data with no gold for any of the pipeline's components (NER-only docs on a
tagger) printed the speed alone, exited 0 and wrote all-null scores. Each is now one line and exit
status 1: the pipeline named with why it cannot be loaded, the suffix refused (before the pipeline
is loaded) with what to do, and the missing gold annotation said, with no scores file written.
"""
import shutil
from pathlib import Path

import pytest
import spacy
from spacy.tokens import DocBin, Span
from spacy.training import Example

from spacy_elmo.cli import app

from ..cli.invoke import refused, runner


def _tagger(path: Path) -> Path:
    """A small initialized tagger pipeline on disk (its tagger/model a real file to cut short)."""
    nlp = spacy.blank("en")
    nlp.add_pipe("tagger")
    gold = nlp.make_doc("The cat sat")
    for token, tag in zip(gold, ["DT", "NN", "VBD"]):
        token.tag_ = tag
    nlp.initialize(lambda: [Example(nlp.make_doc(gold.text), gold)])
    nlp.to_disk(path)
    return path


def _docbin(path: Path, tagged: bool) -> Path:
    """A .spacy-format file of one doc: gold tags, or only gold entities."""
    doc = spacy.blank("en").make_doc("Alice met Bob")
    if tagged:
        for token, tag in zip(doc, ["NNP", "VBD", "NNP"]):
            token.tag_ = tag
    else:
        doc.ents = [Span(doc, 0, 1, "PERSON"), Span(doc, 2, 3, "PERSON")]
    DocBin(docs=[doc], store_user_data=True).to_disk(path)
    return path


@pytest.fixture
def pipeline(tmp_path) -> Path:
    return _tagger(tmp_path / "pipeline")


def test_a_config_that_does_not_parse_is_one_line(pipeline, tmp_path):
    (pipeline / "config.cfg").write_text("[nlp\n")
    refused(["evaluate", pipeline, _docbin(tmp_path / "g.spacy", True)], f"{pipeline}: cannot load the pipeline (",
            "Config validation error")


def test_a_component_file_cut_short_is_one_line(pipeline, tmp_path):
    model = pipeline / "tagger" / "model"
    with model.open("r+b") as handle:
        handle.truncate(1000)
    refused(["evaluate", pipeline, _docbin(tmp_path / "g.spacy", True)],
            f"{pipeline}: cannot load the pipeline (", "Unpack failed")


def test_a_language_spacy_lacks_is_one_line(pipeline, tmp_path):
    config = pipeline / "config.cfg"
    config.write_text(config.read_text().replace('lang = "en"', 'lang = "zz"'))
    refused(["evaluate", pipeline, _docbin(tmp_path / "g.spacy", True)],
            f"{pipeline}: cannot load the pipeline (", "E048")


def test_a_docbin_not_named_spacy_is_refused_with_the_reason_before_loading(tmp_path):
    data = tmp_path / "dev.bin"
    shutil.copy(_docbin(tmp_path / "dev.spacy", True), data)
    # no pipeline there: the name is checked first, so nothing is loaded for a file that would read as nothing
    text = refused(["evaluate", tmp_path / "no-such-pipeline", data], f"{data}: not named *.spacy", "rename it")
    assert "no documents" not in text


def test_data_without_gold_for_the_pipeline_is_one_line_and_writes_nothing(pipeline, tmp_path):
    output = tmp_path / "scores.json"
    refused(["evaluate", pipeline, _docbin(tmp_path / "ner.spacy", False), "-o", output],
            "ner.spacy: no gold annotation for any of the pipeline's components (tagger)")
    assert not output.exists()


def test_data_with_gold_tags_still_scores(pipeline, tmp_path):
    result = runner.invoke(app, ["evaluate", str(pipeline), str(_docbin(tmp_path / "g.spacy", True))])
    assert result.exit_code == 0, result.output
    assert "TAG (XPOS)" in result.output
