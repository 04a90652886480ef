"""Regression: TreebankTokenizer's `initialize` crashed on French.

A learned number shape was joined to the language's own TOKEN_MATCH as "learned|own", and French's
starts with global inline flags ("(?iu)"): Python 3.11 refuses them mid-expression (re.error:
"global flags not at the start of the expression"), so a French treebank with numbers like
"01-23-45" could not initialize. The language's flags are now scoped to its own part.
"""
import re

import spacy
from spacy.tokens import Doc
from spacy.training import Example

from spacy_elmo.pipeline.treebank_tokenizer import _either

from ..pipeline.test_treebank_tokenizer import CONFIG as ENGLISH_CONFIG

CONFIG = ENGLISH_CONFIG.replace('lang = "en"', 'lang = "fr"')

GOLD = [(["Appelez", "01-23-45", "demain"], [True, True, False]),
        (["Appelez", "02-34-56", "."], [True, False, False]),
        (["Fax", "03-45-67", "."], [True, False, False])]


def _words(nlp, text):
    return [token.text for token in nlp.tokenizer(text)]


def test_a_french_treebank_initializes_and_keeps_french_rules():
    nlp = spacy.util.load_model_from_config(spacy.util.load_config_from_str(CONFIG), auto_fill=True)
    french = spacy.blank("fr")
    elided = "Aujourd'hui VA-T-IL venir ?"
    docs = [Doc(nlp.vocab, words=words, spaces=spaces) for words, spaces in GOLD]
    nlp.initialize(lambda: [Example(nlp.make_doc(doc.text), doc) for doc in docs])
    assert _words(nlp, "Appelez 04-56-78 demain") == ["Appelez", "04-56-78", "demain"]
    assert _words(nlp, elided) == _words(french, elided)  # French's own case-insensitive rules still apply
    again = spacy.util.load_model_from_config(spacy.util.load_config_from_str(CONFIG), auto_fill=True)
    again.tokenizer.from_bytes(nlp.tokenizer.to_bytes())
    for text in ("Appelez 04-56-78 demain", elided):
        assert _words(again, text) == _words(nlp, text)


def test_the_language_flags_apply_to_its_part_only():
    pattern = re.compile(_either("(?:ab)$", "(?iu)(?s)x.y"))
    assert pattern.match("X\nY") and pattern.match("ab") and not pattern.match("AB")
    assert _either("a", None) == "a" and _either("a", "b|c") == "a|b|c"
