"""Regression: replace_listeners changed a component's predictions where a sentence-setting component
sat between `elmo` and it.

With segmentation "auto", `elmo` (first in the pipeline) read the docs in windows; the copy of its
biLM that replace_listeners gives the tagger runs at the tagger's place, after the senter, and read
them sentence by sentence: 3 of 15 tags changed, before and after a save and load. The copy (and the
standalone block written in the tagger's config) now reads in windows, as `elmo` did, with a warning.
Where no such component sits between them, nothing changes.
"""
import warnings

import numpy
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

WORDS = "I went to the bank . It was closed . So I walked home .".split()
TAGS = ["PRON", "VERB", "ADP", "DET", "NOUN", "PUNCT", "PRON", "AUX", "ADJ", "PUNCT", "ADV", "PRON", "VERB", "ADV",
        "PUNCT"]


def _trained(allennlp_dir, order):
    spacy.util.fix_random_seed(0)
    listener = {"@architectures": "spacy-elmo.ElmoListener.v1", "width": 16, "upstream": "elmo", "dropout": 0.0}
    nlp = spacy.blank("en")
    for name in order:
        if name == "elmo":
            nlp.add_pipe("elmo", config={"weights": str(allennlp_dir)})
        elif name == "sentencizer":
            nlp.add_pipe("sentencizer")
        else:
            nlp.add_pipe(name, config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": listener}})
    starts = [i == 0 or WORDS[i - 1] == "." for i in range(len(WORDS))]
    example = Example(Doc(nlp.vocab, words=WORDS), Doc(nlp.vocab, words=WORDS, tags=TAGS, sent_starts=starts))
    nlp.initialize(lambda: [example])
    optimizer = nlp.create_optimizer()
    for _ in range(100):
        nlp.update([example], sgd=optimizer)
    return nlp


def _scores(nlp):
    """The tagger's scores at its place in the pipeline (the components before it run on the doc)."""
    doc = nlp.make_doc(" ".join(WORDS))
    for name, proc in nlp.pipeline:
        if name == "tagger":
            return proc.model.predict([doc])[0]
        doc = proc(doc)


def test_the_copy_reads_in_windows_as_elmo_did(allennlp_dir, tmp_path):
    nlp = _trained(allennlp_dir, ["elmo", "senter", "tagger"])
    before = _scores(nlp)
    assert len(list(nlp(" ".join(WORDS)).sents)) > 1  # the senter does split the text
    with pytest.warns(UserWarning, match="after senter, which set.s. sentence starts.*reads them in windows too"):
        nlp.replace_listeners("elmo", "tagger", ["model.tok2vec"])
    assert nlp.get_pipe_config("tagger")["model"]["tok2vec"]["bilm"]["segmentation"] == "windows"
    numpy.testing.assert_array_equal(_scores(nlp), before)
    nlp.to_disk(tmp_path / "nlp")
    numpy.testing.assert_array_equal(_scores(spacy.load(tmp_path / "nlp")), before)


@pytest.mark.parametrize("order", [["elmo", "tagger", "senter"], ["sentencizer", "elmo", "tagger"],
                                   # a setter before elmo too: elmo read sentences, and so does the copy
                                   ["sentencizer", "elmo", "senter", "tagger"]])
def test_nothing_changes_without_a_sentence_setter_between(allennlp_dir, tmp_path, order):
    nlp = _trained(allennlp_dir, order)
    before = _scores(nlp)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nlp.replace_listeners("elmo", "tagger", ["model.tok2vec"])
    assert nlp.get_pipe_config("tagger")["model"]["tok2vec"]["bilm"]["segmentation"] == "auto"
    numpy.testing.assert_array_equal(_scores(nlp), before)
    nlp.to_disk(tmp_path / "nlp")
    numpy.testing.assert_array_equal(_scores(spacy.load(tmp_path / "nlp")), before)
