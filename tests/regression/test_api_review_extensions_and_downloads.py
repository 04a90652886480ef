"""Regression: the public API off the happy path (a review of how a Python user meets it).

- `load_model(url)` drew pooch's progress bar into a log or a pipe (a run of carriage-return frames,
  ending on a "0%" reset and a made-up rate): a bar now only goes to a terminal.
- `token._.elmo = x`, `span._.elmo = x` and the `elmo_vector`s raised nothing and did nothing: spaCy
  kept the value in `doc.user_data`, which the getters never read. They now raise AttributeError.
- `doc._.elmo = layers` kept integer and string arrays as they were (a string array failed only when
  a vector was read); integers now become float32, strings are a ValueError at the assignment.
- `BiLM.embed(generator)` failed with "object of type 'generator' has no len()".
- `from spacy_elmo import Elmo` was `Any` to type checkers, and `dir(spacy_elmo)` left out the five
  names that load on first use.
"""
import io
import sys

import numpy
import pytest
import spacy

import spacy_elmo
from spacy_elmo.io import resolve_source

from ..io.model_server import make_zip, published_dir, serve, tiny_bilm, use_cache


@pytest.fixture
def nlp():
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    return nlp


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize("tty", [False, True])
def test_a_download_draws_a_bar_only_on_a_terminal(tmp_path, monkeypatch, tty):
    use_cache(tmp_path, monkeypatch)
    for server in serve(tmp_path):
        make_zip(published_dir(tmp_path / "published", tiny_bilm(seed=3)), server.root / "elmo.zip", prefix="elmo/")
        stderr = _Stream(tty)
        monkeypatch.setattr(sys, "stderr", stderr)
        resolve_source(server.url("elmo.zip"))
        monkeypatch.undo()
        assert ("elmo.zip" in stderr.getvalue()) == tty, stderr.getvalue()


@pytest.mark.parametrize("attribute", ["elmo", "elmo_vector"])
def test_the_span_token_and_vector_attributes_are_read_only(nlp, attribute):
    doc = nlp("The bank of the river.")
    before = getattr(doc[1]._, "elmo_vector").copy()
    for obj, name in [(doc[1], "token"), (doc[0:2], "span")] + ([(doc, "doc")] if attribute == "elmo_vector" else []):
        with pytest.raises(AttributeError, match=rf"{name}\._\.{attribute} is read-only"):
            setattr(obj._, attribute, None)
    numpy.testing.assert_array_equal(doc[1]._.elmo_vector, before)
    assert not [key for key in doc.user_data if attribute in str(key) and key[2] is not None]


def test_assigned_layers_must_be_numbers(nlp):
    doc = nlp("a b c")
    width = doc._.elmo.shape[2]
    doc._.elmo = numpy.ones((3, 3, width), dtype=numpy.int64)
    assert doc._.elmo.dtype == numpy.float32 and doc[0]._.elmo_vector.dtype == numpy.float32
    with pytest.raises(ValueError, match="must be an array of floats, got one of dtype <U1"):
        doc._.elmo = numpy.full((3, 3, width), "x")
    assert doc._.elmo.dtype == numpy.float32  # what the doc kept stays


def test_embed_reads_a_generator_of_sentences():
    bilm = tiny_bilm(seed=3)
    sentences = [["a", "b"], ["c"]]
    got = bilm.embed(s for s in sentences)
    for g, expected in zip(got, bilm.embed(sentences)):
        numpy.testing.assert_array_equal(g, expected)


def test_the_lazy_names_are_listed_and_typed():
    assert {"Elmo", "ElmoListener", "ScalarMix", "ElmoTok2Vec", "ElmoBiLM"} <= set(dir(spacy_elmo))
    source = open(spacy_elmo.__file__, encoding="utf-8").read()
    assert "if TYPE_CHECKING:" in source and "from .pipeline import Elmo" in source


def test_every_error_the_package_defines_shares_one_base():
    """A caller catches them all with `except spacy_elmo.SpacyElmoError` (they were plain ValueErrors,
    RuntimeErrors and ImportErrors), and each keeps the built-in type it had."""
    import ast
    import importlib
    from pathlib import Path

    package = Path(spacy_elmo.__file__).parent
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and node.name != "SpacyElmoError" and node.name.endswith(
                ("Error", "Conflict", "Required", "NotReady")
            ):
                module = ".".join(path.relative_to(package.parent).with_suffix("").parts)
                found.append(getattr(importlib.import_module(module), node.name))
    assert len(found) >= 20
    outside = [cls.__qualname__ for cls in found if not issubclass(cls, spacy_elmo.SpacyElmoError)]
    assert outside == []
    assert all(issubclass(cls, (ValueError, RuntimeError, ImportError)) for cls in found)
    with pytest.raises(spacy_elmo.SpacyElmoError):
        spacy_elmo.load_bilm("/no/such/model/directory")


def test_a_notebook_s_stderr_gets_the_bar():
    """A second look: Jupyter's stderr is no terminal, yet draws bars; the first fix left it without one."""
    from spacy_elmo.progress_bars import is_interactive

    notebook = type("OutStream", (io.StringIO,), {"__module__": "ipykernel.iostream", "isatty": lambda self: False})
    assert is_interactive(notebook()) and not is_interactive(_Stream(False)) and is_interactive(_Stream(True))
    assert not is_interactive(None)
