"""Regression: TreebankTokenizer.initialize added its rules to whatever the tokenizer already held.

A second `nlp.initialize()` on the same corpus put the learned number shapes into token_match
again (the pattern doubled each time) and the punctuation runs into the suffix and prefix
patterns again; initializing on an empty corpus kept the rules learned from an earlier one. Each
`initialize` now starts again from the language's defaults: initialize(corpus) gives the same
tokenizer, saved to the same bytes, whatever ran before.
"""
import spacy
from spacy.training import Example

from spacy_elmo.pipeline.treebank_tokenizer import TreebankTokenizer, _pattern_of
from tests.pipeline.test_treebank_tokenizer import CONFIG, GOLD, _texts

TEXT = "Send an e-mail to 281-435-0295 now!! milk and/or sugar, its fine"
OTHER = [  # another treebank's convention: "its" is two tokens, and nothing else differs from spaCy's
    (["it", "s", "fine"], [False, True, False]),
    (["it", "s", "late"], [False, True, False]),
]


def _blank():
    return spacy.util.load_model_from_config(spacy.util.load_config_from_str(CONFIG), auto_fill=True)


def _initialize(nlp, corpus) -> None:
    gold = [spacy.tokens.Doc(nlp.vocab, words=words, spaces=spaces) for words, spaces in corpus]
    nlp.initialize(lambda: [Example(nlp.make_doc(doc.text), doc) for doc in gold])


def _saved(nlp) -> bytes:
    """The tokenizer as it saves: its patterns and special cases (not the vocab, which tokenizing grows)."""
    return nlp.tokenizer.to_bytes(exclude=["vocab"])


def _once(corpus):
    nlp = _blank()
    _initialize(nlp, corpus)
    return nlp


def test_initializing_twice_is_initializing_once():
    once, twice = _once(GOLD), _once(GOLD)
    _initialize(twice, GOLD)
    assert isinstance(twice.tokenizer, TreebankTokenizer)
    for name in ("token_match", "suffix_search", "prefix_search"):
        pattern = _pattern_of(getattr(twice.tokenizer, name))
        assert pattern == _pattern_of(getattr(once.tokenizer, name)), name
    assert _pattern_of(once.tokenizer.token_match).count(r"\d{3}\-\d{3}\-\d{4,}") == 1
    assert twice.tokenizer.rules == once.tokenizer.rules
    assert _saved(twice) == _saved(once)
    assert _texts(twice.tokenizer, TEXT) == _texts(once.tokenizer, TEXT)


def test_initializing_on_another_corpus_forgets_the_first():
    default = _blank()
    emptied = _once(GOLD)
    _initialize(emptied, [])  # no corpus: the language's own tokenizer again
    assert _saved(emptied) == _saved(default)
    assert _texts(emptied.tokenizer, TEXT) == _texts(spacy.blank("en").tokenizer, TEXT)

    other, moved = _once(OTHER), _once(GOLD)
    _initialize(moved, OTHER)
    assert moved.tokenizer.rules["its"] == [{"ORTH": "it"}, {"ORTH": "s"}] and "e-mail" not in moved.tokenizer.rules
    assert _saved(moved) == _saved(other)
    assert _texts(moved.tokenizer, TEXT) == _texts(other.tokenizer, TEXT)


def test_a_reinitialized_tokenizer_saves_and_loads_as_itself(tmp_path):
    nlp = _once(OTHER)
    _initialize(nlp, GOLD)
    expected = _texts(nlp.tokenizer, TEXT)
    assert expected == _texts(_once(GOLD).tokenizer, TEXT) != _texts(spacy.blank("en").tokenizer, TEXT)
    nlp.to_disk(tmp_path / "nlp")
    loaded = spacy.load(tmp_path / "nlp")
    assert _saved(loaded) == _saved(nlp)
    assert _texts(loaded.tokenizer, TEXT) == expected
    from_bytes = _blank()
    from_bytes.from_bytes(nlp.to_bytes())
    assert _texts(from_bytes.tokenizer, TEXT) == expected
