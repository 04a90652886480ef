"""scripts/retokenize.py: a trained pipeline's copy with a tokenizer learned from a treebank."""
import sys
from pathlib import Path

import pytest
import spacy
from spacy.tokens import Doc, DocBin

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import retokenize  # noqa: E402

from spacy_elmo.pipeline.treebank_tokenizer import TreebankTokenizer  # noqa: E402

GOLD = [(["an", "e-mail", "."], [True, False, False]), (["my", "e-mail", "!!"], [True, False, False]),
        (["one", "e-mail", "or", "two"], [True, True, True, False])]


@pytest.fixture
def trained(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.to_disk(tmp_path / "model")
    DocBin(docs=[Doc(nlp.vocab, words=w, spaces=s) for w, s in GOLD]).to_disk(tmp_path / "train.spacy")
    return tmp_path


def test_copy_keeps_the_components_and_learns_the_tokens(trained, capsys):
    retokenize.main([str(trained / "model"), str(trained / "out"), "--train", str(trained / "train.spacy"),
                     "--report", str(trained / "train.spacy")])
    copy = spacy.load(trained / "out")
    assert isinstance(copy.tokenizer, TreebankTokenizer)
    assert copy.pipe_names == ["sentencizer"]
    assert [t.text for t in copy("an e-mail")] == ["an", "e-mail"]
    # "!!", seen once, stays below the default min_count (2): nine of the ten gold tokens are found
    assert "60.00% -> 90.00%" in " ".join(capsys.readouterr().out.split())


def test_refuses_to_overwrite_the_pipeline_or_read_what_is_missing(trained):
    with pytest.raises(SystemExit):
        retokenize.main([str(trained / "model"), str(trained / "model"), "--train", str(trained / "train.spacy")])
    with pytest.raises(SystemExit):
        retokenize.main([str(trained / "model"), str(trained / "out"), "--train", str(trained / "missing.spacy")])
    assert not (trained / "out").exists()
