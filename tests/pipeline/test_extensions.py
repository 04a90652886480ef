"""Extension attributes: registered without replacing another package's of the same name."""
import pytest
import spacy
from spacy.tokens import Doc

from spacy_elmo.pipeline import extensions
from spacy_elmo.pipeline.extensions import ExtensionConflict, register_extensions


def _foreign_getter(doc):
    return "another package's value"


@pytest.fixture
def foreign_doc_elmo():
    """Doc._.elmo owned by another package for the duration of a test."""
    Doc.remove_extension("elmo")
    Doc.set_extension("elmo", getter=_foreign_getter)
    yield
    Doc.remove_extension("elmo")
    register_extensions()


def test_another_packages_extension_is_left_alone(foreign_doc_elmo, allennlp_dir):
    conflicts = register_extensions(strict=False)
    assert conflicts == [f"Doc._.elmo (registered by {__name__})"]
    assert Doc.get_extension("elmo")[2] is _foreign_getter
    nlp = spacy.blank("en")
    with pytest.raises(ExtensionConflict, match=r"Doc\._\.elmo .*Doc.remove_extension\('elmo'\)"):
        nlp.add_pipe("elmo", config={"weights": str(allennlp_dir)})
    assert Doc.get_extension("elmo")[2] is _foreign_getter
    assert nlp.make_doc("a")._.elmo == "another package's value"


def test_our_own_extensions_are_declared_again_without_conflict():
    assert register_extensions() == []
    assert Doc.get_extension("elmo")[2] is extensions.get_doc_layers
