"""Regression: tag_breakdown.py --run NAME=PIPELINE, where the pipeline's `lang` is one spaCy lacks,
was spaCy's ImportError (E048) as a traceback; `evaluate` already gave one line. Both now read the
pipeline through one helper (`spacy_elmo.cli._util.try_load_pipeline`), so the script names the run
and the reason in one line.
"""
import pytest
import spacy
from spacy.tokens import DocBin

from tests.conftest import tagged_examples
from tests.regression.test_eval_review_evaluate_inputs import _tagger
from tests.regression.test_train_script_exit_status_and_settings import _script, _status


def test_a_language_spacy_lacks_is_one_line(capsys, tmp_path):
    gold = tmp_path / "gold.spacy"
    DocBin(docs=[eg.reference for eg in tagged_examples(spacy.blank("en"))]).to_disk(gold)
    pipeline = tmp_path / "pipeline"
    _tagger(pipeline)
    config = pipeline / "config.cfg"
    config.write_text(config.read_text().replace('lang = "en"', 'lang = "zz"'))
    argv = [str(gold), "--train", str(gold), "--run", f"a={pipeline}"]
    with pytest.raises(SystemExit) as exited:
        _script("tag_breakdown").main(argv)
    assert _status(exited.value.code) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert "Traceback" not in "\n".join(err)
    assert err[-1].startswith(f"--run a={pipeline}: cannot load the pipeline (")
    assert "E048" in err[-1]
