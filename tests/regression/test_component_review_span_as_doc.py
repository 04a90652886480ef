"""Regression (documentation): `Span.as_doc()` drops the ELMo layers, and the docs did not say so.

docs/component.md listed what `copy()`, `pickle`, `DocBin` and the others keep
of `doc._.elmo`, but not `span.as_doc()`, whose doc has `doc._.elmo` None (a
listener called on it gets zeros). The behaviour is spaCy's (it copies no
user data); it is now listed there, with what to do instead.
"""
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs" / "component.md"


def test_as_doc_has_no_layers_but_the_span_has(nlp_elmo):
    doc = nlp_elmo("the cat sat on the mat")
    span = doc[1:3]
    assert span.as_doc()._.elmo is None
    assert span._.elmo.shape[1] == 2


def test_the_docs_list_as_doc_with_the_other_copies():
    page = DOCS.read_text(encoding="utf-8")
    assert "| `span.as_doc()` | layers dropped | layers dropped |" in page
    assert "`Span.as_doc()` builds a new doc without the span's layers" in page
