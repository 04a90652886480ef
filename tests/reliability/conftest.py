import pytest
import spacy


@pytest.fixture(scope="module")
def nlp_rel(request):
    from tests.conftest import FIXTURES, require

    weights = require(FIXTURES / "allennlp_elmo")
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(weights)})
    return nlp


@pytest.fixture(scope="module")
def bilm_rel():
    from tests.conftest import FIXTURES, require

    from spacy_elmo.io import load_bilm

    return load_bilm(require(FIXTURES / "allennlp_elmo"))
