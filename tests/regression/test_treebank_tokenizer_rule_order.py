"""TreebankTokenizer added its special cases one at a time and before its patterns; spaCy restores a saved
tokenizer the other way round (patterns, then all rules at once). The tokens were the same, but the learned
tokenizer ran three to four times slower than its own saved copy. It now applies its rules in the order
loading does. The speed is measured by benchmarks/bench_tokenizer.py (no wall-clock thresholds in tests);
this test pins what the fix relies on: a learned tokenizer and its saved copy are the same tokenizer."""
import spacy
from spacy.training import Example

from spacy_elmo.gold_data import ud_docs

TOKENIZER = {"nlp": {"tokenizer": {"@tokenizers": "spacy-elmo.TreebankTokenizer.v1"}}}


def test_learned_and_loaded_tokenizers_agree_on_ewt(ewt_dir, tmp_path):
    docs = ud_docs(ewt_dir / "en_ewt-ud-train.conllu.gz", n_sents=10, limit=3000)
    nlp = spacy.blank("en", config=TOKENIZER)
    nlp.initialize(lambda: [Example(nlp.make_doc(doc.text), doc) for doc in docs[:200]])
    assert nlp.tokenizer.rules and "e-mail" in nlp.tokenizer.rules  # it learned something
    assert nlp.tokenizer.rules.keys() >= spacy.blank("en").tokenizer.rules.keys()  # and kept the language's own
    nlp.to_disk(tmp_path / "nlp")
    loaded = spacy.load(tmp_path / "nlp")
    for doc in docs[200:]:
        assert [t.text for t in nlp.make_doc(doc.text)] == [t.text for t in loaded.make_doc(doc.text)], doc.text
