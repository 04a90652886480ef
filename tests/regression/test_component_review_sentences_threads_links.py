"""Regression: a review of the spaCy side found three ways a pipeline behaved other than it said.

- A sentencizer before `elmo`, as the docs advise, is not run by nlp.update: in training `elmo` read
  the docs in windows, at prediction sentence by sentence, and the listeners learnt from other
  layers than they predicted with, without a word. `initialize` now warns where such a component is
  not in [training] annotating_components (the docs say to list it).
- Every child process (a web server's workers, a multiprocessing pool) had torch set to one thread
  at its first doc, over the user's own setting, and warned that vector hooks would be lost: only
  nlp.pipe(n_process=N) workers are meant. Now only spaCy's workers are set (and warned).
- A listener left unlinked by spacy.load(disable=[...]) then nlp.enable_pipe failed in training
  with "the elmo component did not run in this update", blaming frozen_components; it now names the
  unlinked listener and the fix.
"""
import multiprocessing
import warnings

import pytest
import spacy
import torch
from spacy.language import Language

from spacy_elmo import threads

from ..conftest import tagged_examples, tagger_pipeline


def _sentence_pipeline(weights, annotating=()):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("elmo", config={"weights": str(weights)})
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2",
                                             "tok2vec": {"@architectures": "spacy-elmo.ElmoListener.v1"}}})
    nlp.config["training"]["annotating_components"] = list(annotating)
    return nlp


def test_a_sentencizer_not_annotating_in_training_is_warned_about(allennlp_dir):
    nlp = _sentence_pipeline(allennlp_dir)
    with pytest.warns(UserWarning, match=r"sentencizer before it set\(s\) sentence starts.*annotating_components"):
        nlp.initialize(lambda: tagged_examples(nlp))
    # spacy train initializes with its frozen and sourced components disabled: those warn too (a second look)
    frozen = _sentence_pipeline(allennlp_dir)
    with pytest.warns(UserWarning, match="sentencizer before it"):
        with frozen.select_pipes(disable=["sentencizer"]):
            frozen.initialize(lambda: tagged_examples(frozen))
    listed = _sentence_pipeline(allennlp_dir, annotating=["sentencizer"])
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*sentence starts")
        listed.initialize(lambda: tagged_examples(listed))


@Language.component("test_record_torch_threads")
def _record_torch_threads(doc):
    doc.user_data["torch_threads"] = torch.get_num_threads()
    return doc


def test_only_spacys_workers_get_one_thread(allennlp_dir, monkeypatch):
    nlp, _, _ = tagger_pipeline(allennlp_dir)
    nlp.add_pipe("test_record_torch_threads")
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        # a child process that is no worker of nlp.pipe (as a web server's worker would be)
        monkeypatch.setattr(threads, "_worker", dict(threads._worker, checked=False, pending=False, in_worker=False))
        monkeypatch.setattr(multiprocessing, "parent_process", lambda: object())
        assert nlp("the cat sat").user_data["torch_threads"] == 2
        monkeypatch.undo()
        # spaCy's workers (forked here): one thread each, whatever the parent had
        docs = list(nlp.pipe(["the cat sat", "a dog ran off", "birds fly south"], n_process=2))
        assert [doc.user_data["torch_threads"] for doc in docs] == [1, 1, 1]
    finally:
        torch.set_num_threads(before)


def test_an_unlinked_listener_says_so_in_training(allennlp_dir, tmp_path):
    nlp, _, _ = tagger_pipeline(allennlp_dir)
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline", disable=["tagger"])
    loaded.enable_pipe("tagger")
    optimizer = loaded.resume_training()
    with pytest.raises(ValueError, match="does not know this listener.*_link_components"):
        loaded.update(tagged_examples(loaded), sgd=optimizer)
    loaded._link_components()
    loaded.update(tagged_examples(loaded), sgd=optimizer)


def test_a_new_frozen_elmo_says_it_is_disabled_to_a_listener_of_any_upstream(allennlp_dir):
    """The docs' review: with the default upstream "*", a new elmo in frozen_components (spaCy disables it
    while it initializes) was reported as missing ("add an 'elmo' component"), not as disabled."""
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir)})
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2",
                                             "tok2vec": {"@architectures": "spacy-elmo.ElmoListener.v1",
                                                         "upstream": "*"}}})
    with pytest.raises(ValueError, match="the elmo component 'elmo' is disabled.*frozen_components"):
        with nlp.select_pipes(disable=["elmo"]):  # what spacy train does with frozen_components = ["elmo"]
            nlp.initialize(lambda: tagged_examples(nlp))
