"""Regression: a doc retokenized after `elmo` read other tokens' vectors, silently.

The layers live in doc.user_data, which spaCy's retokenizer does not touch:
after `merge_entities` (or any merge or split) placed after `elmo`,
`token._.elmo_vector` returned a neighbour's vector, a listener fed a tagger
shifted rows, and a split doc's last token raised IndexError. Reading
layers that no longer match the doc's length is now one `RetokenizedError`
naming the remedy; retokenizing before `elmo` is the way that works.
"""
import pytest
from spacy.language import Language

from spacy_elmo.pipeline.extensions import RetokenizedError

from ..conftest import tagger_pipeline


@Language.component("regression_merge_first_two")
def _merge_first_two(doc):
    with doc.retokenize() as retokenizer:
        retokenizer.merge(doc[0:2])
    return doc


@Language.component("regression_split_first")
def _split_first(doc):
    with doc.retokenize() as retokenizer:
        retokenizer.split(doc[0], ["th", "e"], heads=[(doc[0], 1), doc[1]])
    return doc


@pytest.mark.parametrize("store", ["layers", "mix"])
def test_reading_the_vectors_of_a_doc_merged_after_elmo_is_an_error(nlp_elmo, store):
    nlp_elmo.get_pipe("elmo").cfg["store"] = store
    doc = nlp_elmo("the big cat sat on the mat")
    before = doc[3]._.elmo_vector.copy()
    with doc.retokenize() as retokenizer:
        retokenizer.merge(doc[0:2])
    for read in (lambda: doc[2]._.elmo_vector, lambda: doc._.elmo_vector, lambda: doc[0:2]._.elmo_vector):
        with pytest.raises(RetokenizedError, match="retokenized .* after the 'elmo' component"):
            read()
    assert before.shape[0] > 0


@pytest.mark.parametrize("retokenize", ["regression_merge_first_two", "regression_split_first"])
def test_a_listener_after_a_retokenizing_component_is_an_error(allennlp_dir, retokenize):
    nlp, _, _ = tagger_pipeline(allennlp_dir)
    nlp.add_pipe(retokenize, after="elmo")
    with pytest.raises(RetokenizedError, match="before 'elmo'"):
        nlp("the cat sat on the mat")


def test_retokenizing_before_elmo_works(allennlp_dir):
    nlp, _, _ = tagger_pipeline(allennlp_dir)
    nlp.add_pipe("regression_merge_first_two", before="elmo")
    doc = nlp("the cat sat on the mat")
    assert doc._.elmo.shape[1] == len(doc) == 5 and all(token.tag_ for token in doc)
