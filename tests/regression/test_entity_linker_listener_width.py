"""Regression: an entity linker listening to `elmo` with `width = null` (the listener's default)
failed in initialize with numpy's "operands could not be broadcast together with shapes (1,32)
(1,3)": spaCy's EntityLinker.v2 sizes its layers from its tok2vec's width when it is built, before
the biLM is loaded. `elmo`'s initialize now refuses it in one line naming `width`; with a width the
linker trains and links."""
import pytest
import spacy
from spacy.kb import InMemoryLookupKB
from spacy.tokens import Doc
from spacy.training import Example

WORDS = "Paris is nice .".split()


def _pipeline(allennlp_dir, width, tok2vec=None):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir)})
    listener = tok2vec or {"@architectures": "spacy-elmo.ElmoListener.v1", "upstream": "elmo", "width": width}
    linker = nlp.add_pipe("entity_linker", config={"model": {"@architectures": "spacy.EntityLinker.v2",
                                                             "tok2vec": listener}})

    def knowledge_base(vocab):
        kb = InMemoryLookupKB(vocab, entity_vector_length=3)
        kb.add_entity("Q1", 5, [1, 0, 0])
        kb.add_alias("Paris", ["Q1"], [0.9])
        return kb

    linker.set_kb(knowledge_base)
    example = Example.from_dict(Doc(nlp.vocab, words=WORDS), {
        "words": WORDS, "entities": ["U-LOC", "O", "O", "O"], "links": {(0, 5): {"Q1": 1.0}}})
    return nlp, example


def test_a_null_width_is_refused_naming_the_setting(allennlp_dir):
    nlp, example = _pipeline(allennlp_dir, None)
    with pytest.raises(ValueError, match=r"'entity_linker' listens to 'elmo' with width = null.*set `width` in "
                                         r"\[components.entity_linker.model.tok2vec\]"):
        nlp.initialize(lambda: [example])


def test_with_a_width_the_linker_trains_and_links(allennlp_dir):
    nlp, example = _pipeline(allennlp_dir, 16)
    optimizer = nlp.initialize(lambda: [example])
    losses = nlp.update([example], sgd=optimizer)
    assert losses["entity_linker"] >= 0
    doc = nlp.make_doc(" ".join(WORDS))
    doc.ents = [doc.char_span(0, 5, label="LOC")]
    for name, proc in nlp.pipeline:
        doc = proc(doc)
    assert doc.ents[0].kb_id_ == "Q1"


def test_the_refusal_names_the_block_without_a_width(allennlp_dir):
    listener = {"@architectures": "spacy-elmo.ElmoListener.v1", "upstream": "elmo", "width": 16}
    tok2vec = {"@architectures": "spacy-elmo.ElmoTok2Vec.v1", "width": 16, "elmo": listener,
               "output_elmo": {"@architectures": "spacy-elmo.ElmoListener.v1", "upstream": "elmo"}}
    nlp, example = _pipeline(allennlp_dir, None, tok2vec)
    with pytest.raises(ValueError, match=r"set `width` in \[components.entity_linker.model.tok2vec.output_elmo\] "):
        nlp.initialize(lambda: [example])
