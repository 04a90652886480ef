"""Regression: more of the project's scripts answered a user's mistake with a traceback.

tag_breakdown.py given a .conllu as its test or --train file (spaCy's E1014, which names no file),
static_vectors.py --lang zz (spaCy's ImportError E048, after the biLM had been loaded) and
widen_bilm.py with an OUTPUT that is an existing file (NotADirectoryError): each now exits with
one line naming the file or option and what to do. (report.py on a metrics file cut short:
test_project_review_report.py.)
"""
import pytest
import spacy
from spacy.tokens import DocBin

from tests.conftest import tagged_examples
from tests.text import one_line
from tests.regression.test_train_script_exit_status_and_settings import _script, _status

CONLLU = "# sent_id = 1\n# text = Hi\n1\tHi\thi\tINTJ\tUH\t_\t0\troot\t0:root\t_\n\n"


def _exit(call) -> int:
    with pytest.raises(SystemExit) as exited:
        call()
    return _status(exited.value.code)


@pytest.mark.parametrize("which", ["test", "train"])
def test_tag_breakdown_names_a_file_that_is_not_a_docbin(capsys, tmp_path, which):
    DocBin(docs=[eg.reference for eg in tagged_examples(spacy.blank("en"))]).to_disk(tmp_path / "gold.spacy")
    conllu = tmp_path / "en_ewt-ud-test.conllu"
    conllu.write_text(CONLLU)
    (tmp_path / "model").mkdir()
    test, train = (conllu, tmp_path / "gold.spacy") if which == "test" else (tmp_path / "gold.spacy", conllu)
    argv = [str(test), "--train", str(train), "--run", f"a={tmp_path / 'model'}"]
    assert _exit(lambda: _script("tag_breakdown").main(argv)) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"{conllu}: not a spaCy DocBin (.spacy) file (") and "spacy_elmo corpus ud" in err


def test_static_vectors_names_a_language_spacy_lacks(capsys, tmp_path, monkeypatch):
    static_vectors = _script("static_vectors")
    import spacy_elmo.io

    def not_loaded(*args, **kwargs):  # the language is checked first: no biLM is loaded for nothing
        raise AssertionError("the biLM was loaded")

    monkeypatch.setattr(spacy_elmo.io, "load_model", not_loaded)
    assert _exit(lambda: static_vectors.main([str(tmp_path / "out"), "--lang", "zz"])) == 1
    out = one_line(capsys.readouterr().out)
    assert "--lang zz: no such spaCy language ([E048]" in out and "Traceback" not in out
    assert not (tmp_path / "out").exists()


def test_widen_bilm_names_an_output_that_is_a_file(capsys, tmp_path):
    output = tmp_path / "widened"
    output.write_text("a file")
    argv = ["embedded", str(output), "--projection-dim", "256"]
    assert _exit(lambda: _script("widen_bilm").main(argv)) == 1
    assert f"{output}: exists and is a file, not a directory" in one_line(capsys.readouterr().out)
    assert output.read_text() == "a file"
