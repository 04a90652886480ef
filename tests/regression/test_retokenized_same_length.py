"""Regression: a retokenization that kept the doc's length moved vectors onto other tokens, silently.

The check against retokenization compared only the number of rows with len(doc), so a merge and a
split in one `retokenize()` block ("New York" merged, "big" split) passed it: `doc[1]` ("is") read
the row of "York", and listeners, spans and the vector hooks read shifted rows. The tokens'
character offsets are now kept beside the rows and compared where rows are read; reading one
token's row compares that token only.
"""
import numpy
import pytest
import spacy
from spacy.tokens import Doc, DocBin

from spacy_elmo.pipeline.extensions import OFFSETS_KEY, RetokenizedError

from ..conftest import tagger_pipeline

SAME_NUMBER = "tokens that are no longer the doc's"


def _merge_and_split(doc: Doc) -> Doc:
    """'New York' merged and 'big' split: the same number of tokens, other boundaries from 'is' on."""
    with doc.retokenize() as retokenizer:
        retokenizer.merge(doc[0:2])
        retokenizer.split(doc[3], ["bi", "g"], heads=[(doc[3], 1), doc[2]])
    return doc


@pytest.mark.parametrize("store", ["layers", "mix"])
@pytest.mark.parametrize("store_layers", [True, False])
def test_a_merge_and_a_split_in_one_block_is_an_error(nlp_elmo, store, store_layers):
    elmo = nlp_elmo.get_pipe("elmo")
    elmo.cfg["store"] = store
    elmo.cfg["store_layers"] = store_layers
    elmo.cfg["set_vector_hooks"] = True
    doc = nlp_elmo("New York is big")
    n_tokens = len(doc)
    _merge_and_split(doc)
    assert len(doc) == n_tokens
    reads = [lambda: doc[1]._.elmo_vector, lambda: doc._.elmo_vector, lambda: doc[1:3]._.elmo_vector,
             lambda: doc[1].vector, lambda: doc[0].similarity(doc[1])]
    if store == "layers":
        reads += [lambda: doc._.elmo, lambda: doc[1]._.elmo, lambda: doc[2:4]._.elmo]
    for read in reads:
        with pytest.raises(RetokenizedError, match=SAME_NUMBER):
            read()


def test_tokens_before_the_change_still_read_their_rows(nlp_elmo):
    """Only the rows whose tokens changed are refused; a token left as it was keeps its vector."""
    doc = nlp_elmo("the cat sat down and New York is big")
    before = doc[1]._.elmo_vector.copy()
    with doc.retokenize() as retokenizer:
        retokenizer.merge(doc[5:7])
        retokenizer.split(doc[8], ["bi", "g"], heads=[(doc[8], 1), doc[7]])
    numpy.testing.assert_array_equal(doc[1]._.elmo_vector, before)
    with pytest.raises(RetokenizedError):
        doc[6]._.elmo_vector


def test_a_listener_after_a_same_length_retokenization_is_an_error(allennlp_dir):
    nlp, _, _ = tagger_pipeline(allennlp_dir)
    nlp.add_pipe("regression_merge_and_split", after="elmo")
    with pytest.raises(RetokenizedError, match=SAME_NUMBER):
        nlp("New York is big")


def test_the_offsets_travel_with_the_doc(nlp_elmo):
    """Through DocBin: the check holds on a doc read back, and a doc read back unchanged reads as before."""
    doc = nlp_elmo("New York is big")
    docs = list(DocBin(docs=[doc], store_user_data=True).get_docs(nlp_elmo.vocab))
    assert OFFSETS_KEY in docs[0].user_data
    numpy.testing.assert_array_equal(docs[0][2]._.elmo_vector, doc[2]._.elmo_vector)
    with pytest.raises(RetokenizedError, match=SAME_NUMBER):
        _merge_and_split(docs[0])[1]._.elmo_vector


def test_docs_kept_before_the_offsets_read_as_before(nlp_elmo):
    """A doc saved by an earlier version keeps no offsets: its length alone is checked, as then."""
    doc = nlp_elmo("New York is big")
    expected = doc[2]._.elmo_vector.copy()
    del doc.user_data[OFFSETS_KEY]
    numpy.testing.assert_array_equal(doc[2]._.elmo_vector, expected)


@spacy.Language.component("regression_merge_and_split")
def _merge_and_split_component(doc: Doc) -> Doc:
    return _merge_and_split(doc) if len(doc) == 4 else doc
