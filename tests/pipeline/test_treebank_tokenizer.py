"""spacy-elmo.TreebankTokenizer.v1: a tokenizer that learns a treebank's conventions at initialize."""
import pickle

import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from spacy_elmo.pipeline.treebank_tokenizer import (
    TreebankTokenizer,
    gold_tokens_found,
    learn_treebank_rules,
    shape_pattern,
    word_shape,
)

CONFIG = """
[nlp]
lang = "en"
pipeline = []

[nlp.tokenizer]
@tokenizers = "spacy-elmo.TreebankTokenizer.v1"

[components]

[initialize]

[initialize.tokenizer]
min_count = 2
min_shape_count = 2
"""

# Gold tokens as a treebank like UD English-EWT has them: (words, whether each is followed by a space).
GOLD = [
    (["Send", "an", "e-mail", "now", "!!"], [True, True, True, False, False]),
    (["Read", "the", "e-mail", "."], [True, True, False, False]),
    (["Call", "713-853-3989", "today"], [True, True, False]),
    (["Fax", "212-848-8400", "."], [True, False, False]),
    (["Call", "555-1234", "or", "555-9876", "."], [True, True, True, False, False]),
    (["cats", "and", "/", "or", "dogs"], [True, False, False, True, False]),
    (["tea", "and", "/", "or", "coffee", "!!"], [True, False, False, True, False, False]),
    (["great", "!!", "really"], [True, True, False]),
    (["its", "fine"], [True, False]),
    (["its", "tail"], [True, False]),
    (["it", "s", "raining"], [False, True, False]),
    (["a", "pre-war", "house"], [True, True, False]),
]


def _gold_docs(nlp):
    return [Doc(nlp.vocab, words=words, spaces=spaces) for words, spaces in GOLD]


def _texts(tokenizer, text):
    return [t.text for t in tokenizer(text)]


@pytest.fixture
def learned():
    nlp = spacy.util.load_model_from_config(spacy.util.load_config_from_str(CONFIG), auto_fill=True)
    gold = _gold_docs(nlp)
    nlp.initialize(lambda: [Example(nlp.make_doc(doc.text), doc) for doc in gold])
    return nlp


def test_shapes_and_their_patterns():
    assert word_shape("713-853-3989") == "ddd-ddd-dddd"
    assert word_shape("!!!!!!!") == "!!!!"
    assert word_shape("Email") == "Xxxxx"
    assert shape_pattern("ddd-dddd") == r"\d{3}\-\d{4,}"  # a capped run: four or more
    pattern = shape_pattern("!!!!")
    import re

    assert re.fullmatch(pattern, "!!!!!!!") and not re.fullmatch(pattern, "!!!")


def test_gold_tokens_found_counts_exact_tokens():
    nlp = spacy.blank("en")
    gold = [Doc(nlp.vocab, words=w, spaces=s) for w, s in [(["an", "e-mail", "!!"], [True, False, False]),
                                                           (["and", "/", "or"], [False, False, False])]]
    # spaCy splits "e-mail" into three and "!!" into two, and keeps "and/or" whole: only "an" is found
    assert gold_tokens_found(nlp.tokenizer, gold) == pytest.approx(1 / 6)
    assert gold_tokens_found(nlp.tokenizer, []) == 0.0


def test_unlearned_it_is_the_language_default():
    nlp = spacy.util.load_model_from_config(spacy.util.load_config_from_str(CONFIG), auto_fill=True)
    assert isinstance(nlp.tokenizer, TreebankTokenizer)
    text = "Send an e-mail to 713-853-3989 now!! It's fine, isn't it? (See http://x.org/a-b)"
    assert _texts(nlp.tokenizer, text) == _texts(spacy.blank("en").tokenizer, text)


def test_learned_rules_follow_the_treebank(learned):
    before = spacy.blank("en").tokenizer
    assert _texts(before, "an e-mail") == ["an", "e", "-", "mail"]
    assert _texts(learned.tokenizer, "an e-mail") == ["an", "e-mail"]
    # a special case holds inside punctuation, as spaCy's own do
    assert _texts(learned.tokenizer, "(e-mail)") == ["(", "e-mail", ")"]
    # the split the treebank makes, which spaCy does not
    assert _texts(before, "milk and/or sugar") == ["milk", "and/or", "sugar"]
    assert _texts(learned.tokenizer, "milk and/or sugar") == ["milk", "and", "/", "or", "sugar"]


def test_shapes_generalize_to_unseen_strings(learned):
    # numbers never seen in the gold docs, of a shape it keeps whole
    assert _texts(learned.tokenizer, "dial 281-435-0295 or 646-8420") == ["dial", "281-435-0295", "or", "646-8420"]
    # a punctuation run comes off a word it was never seen with, whole
    assert _texts(learned.tokenizer, "wow!!") == ["wow", "!!"]
    # other shapes keep the language's rules: a range of years is split as before
    assert _texts(learned.tokenizer, "1999-2001") == _texts(spacy.blank("en").tokenizer, "1999-2001")


def test_thresholds_keep_rare_and_minority_analyses_out():
    nlp = spacy.blank("en")
    rules = learn_treebank_rules(_gold_docs(nlp), nlp.tokenizer, min_count=2)
    assert rules.special_cases["e-mail"] == ("e-mail",)
    assert rules.special_cases["and/or"] == ("and", "/", "or")
    assert "pre-war" not in rules.special_cases  # seen once
    assert "its" not in rules.special_cases  # split once, whole twice: the majority is what spaCy does
    assert rules.number_shapes == []  # each shape seen fewer than three times by default
    strict = learn_treebank_rules(_gold_docs(nlp), nlp.tokenizer, min_count=3)
    assert "e-mail" not in strict.special_cases
    loose = learn_treebank_rules(_gold_docs(nlp), nlp.tokenizer, min_count=1)
    assert loose.special_cases["pre-war"] == ("pre-war",)


def test_bad_settings_are_clear_errors():
    nlp = spacy.util.load_model_from_config(spacy.util.load_config_from_str(CONFIG), auto_fill=True)
    with pytest.raises(ValueError, match="min_share"):
        nlp.tokenizer.initialize(lambda: [], nlp=nlp, min_share=0.0)
    with pytest.raises(ValueError, match="min_count"):
        nlp.tokenizer.initialize(lambda: [], nlp=nlp, min_count=0)


def test_round_trips_keep_the_learned_rules(learned, tmp_path):
    text = "Send an e-mail to 281-435-0295 now!! milk and/or sugar"
    expected = _texts(learned.tokenizer, text)
    assert expected != _texts(spacy.blank("en").tokenizer, text)
    learned.to_disk(tmp_path / "nlp")
    loaded = spacy.load(tmp_path / "nlp")
    assert isinstance(loaded.tokenizer, TreebankTokenizer)
    assert _texts(loaded.tokenizer, text) == expected
    from_bytes = spacy.util.load_model_from_config(spacy.util.load_config_from_str(CONFIG), auto_fill=True)
    from_bytes.from_bytes(learned.to_bytes())
    assert _texts(from_bytes.tokenizer, text) == expected
    assert _texts(pickle.loads(pickle.dumps(learned.tokenizer)), text) == expected
    assert [d[2].text for d in learned.pipe([text] * 2, n_process=1)] == ["e-mail"] * 2


def test_on_ud_english_ewt_it_finds_more_gold_tokens(ewt_dir):
    """Learned from 2,000 of EWT train's sentences, it finds more of the next 1,000's gold tokens than spaCy's own."""
    from spacy_elmo.gold_data import ud_docs

    docs = ud_docs(ewt_dir / "en_ewt-ud-train.conllu.gz", n_sents=10, limit=3000)
    learn_from, held_out = docs[:200], docs[200:]
    nlp = spacy.util.load_model_from_config(spacy.util.load_config_from_str(CONFIG), auto_fill=True)
    default = spacy.blank("en").tokenizer

    before = gold_tokens_found(default, held_out)
    nlp.initialize(lambda: [Example(nlp.make_doc(doc.text), doc) for doc in learn_from])
    after = gold_tokens_found(nlp.tokenizer, held_out)
    assert before < 0.995 and after > before + 0.001, (before, after)
    assert _texts(nlp.tokenizer, "my e-mail.") == ["my", "e-mail", "."]
