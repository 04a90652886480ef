import pytest
import spacy


@pytest.fixture
def nlp_elmo(allennlp_dir):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir)})
    return nlp
