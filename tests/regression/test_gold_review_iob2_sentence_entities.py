"""Regression: the Universal NER reader repaired IOB tags over the whole doc's tags at once, so an I- tag
starting a sentence continued the previous sentence's entity across the gold sentence boundary, and the
entities found depended on `--n-sents`. Tags are now repaired sentence by sentence: an I- tag that
starts a sentence starts an entity, and an entity never spans two sentences, whatever `n_sents` is."""
from spacy.tokens import DocBin
from spacy.vocab import Vocab

from spacy_elmo.cli import app
from spacy_elmo.gold_data import uner_docs

from ..cli.invoke import runner

IOB2 = "1\tI\tO\n2\tmet\tO\n3\tJohn\tB-PER\n\n1\tSmith\tI-PER\n2\tleft\tO\n\n"


def _entities(docs):
    return [(e.text, e.label_) for doc in docs for e in doc.ents]


def test_an_entity_does_not_cross_a_sentence_boundary(tmp_path):
    path = tmp_path / "two.iob2"
    path.write_text(IOB2)
    assert _entities(uner_docs(path, n_sents=1)) == [("John", "PER"), ("Smith", "PER")]
    assert _entities(uner_docs(path, n_sents=10)) == [("John", "PER"), ("Smith", "PER")]
    out = tmp_path / "o.spacy"
    result = runner.invoke(app, ["corpus", "ner", str(path), str(out), "-n", "10"])
    assert result.exit_code == 0, result.output
    assert _entities(DocBin().from_disk(out).get_docs(Vocab())) == [("John", "PER"), ("Smith", "PER")]


def test_an_entity_within_a_sentence_is_still_one(tmp_path):
    path = tmp_path / "one.iob2"
    path.write_text("1\tJohn\tB-PER\n2\tSmith\tI-PER\n3\tleft\tO\n\n1\tSmith\tI-PER\n2\tSmith\tI-PER\n\n")
    assert _entities(uner_docs(path, n_sents=2)) == [("John Smith", "PER"), ("Smith Smith", "PER")]
