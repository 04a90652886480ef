"""Regression: three faults of the component in worker processes and saved configs (a code review, 2026-12-07).

- The read-only setters of five extension attributes were closures. `nlp.pipe(n_process=N)` pickles
  every registered extension for its workers where they are spawned (the default start method on
  macOS and Windows, forkserver on Linux from Python 3.14), so it failed with "Can't pickle local
  object" for every pipeline in a process that had imported spacy_elmo.
- A spawned worker kept torch's default thread count (every core, in each of N workers): only
  forked ones dropped to one thread.
- A setting that the saved config took from a variable (`gamma = ${vars.gamma}`) was compared with
  the text `${vars.gamma}`, so an override given at loading warned that the component had changed.
"""
import multiprocessing
import pickle
import re
import warnings

import pytest
import spacy
import torch
from spacy.tokens import Doc
from spacy.tokens.underscore import Underscore

from spacy_elmo import threads

from ..conftest import tagger_pipeline


def test_the_extension_registry_pickles_and_the_setters_still_refuse(allennlp_dir):
    nlp, _, _ = tagger_pipeline(allennlp_dir)
    registries = (Underscore.doc_extensions, Underscore.span_extensions, Underscore.token_extensions)
    pickle.loads(pickle.dumps(registries))  # what spaCy sends to spawned workers
    doc = nlp("the cat sat")
    for target, attribute in ((doc, "elmo_vector"), (doc[0:2], "elmo"), (doc[1], "elmo_vector")):
        with pytest.raises(AttributeError, match=r"\._\.elmo(_vector)? is read-only"):
            setattr(target._, attribute, None)
    doc._.elmo = doc._.elmo  # the layers themselves stay assignable
    assert isinstance(doc, Doc)


def test_a_spawned_worker_uses_one_torch_thread(allennlp_dir, monkeypatch):
    nlp, _, _ = tagger_pipeline(allennlp_dir)
    before = torch.get_num_threads()
    monkeypatch.setattr(threads, "_worker", dict(threads._worker, checked=False, pending=False, in_worker=False))
    monkeypatch.setattr(threads, "in_spacy_pipe_worker", lambda: True)  # as in nlp.pipe's spawned worker
    try:
        torch.set_num_threads(2)
        nlp("the cat sat")
        assert torch.get_num_threads() == 1
        torch.set_num_threads(2)
        nlp("the cat sat again")  # once per process: a later setting of the user's stays
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_the_main_process_keeps_its_threads(allennlp_dir, monkeypatch):
    nlp, _, _ = tagger_pipeline(allennlp_dir)
    before = torch.get_num_threads()
    monkeypatch.setattr(threads, "_worker", dict(threads._worker, checked=False, pending=False, in_worker=False))
    try:
        torch.set_num_threads(2)
        nlp("the cat sat")
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_an_override_of_a_setting_saved_as_a_variable_does_not_warn(allennlp_dir, tmp_path):
    nlp, _, _ = tagger_pipeline(allennlp_dir, elmo_config={"gamma": 1.0})
    nlp.to_disk(tmp_path)
    config = (tmp_path / "config.cfg").read_text(encoding="utf-8")
    block = re.search(r"\[components\.elmo\]\n(.*?)\n\n", config, re.S)
    assert block is not None and "gamma = 1.0" in block.group(1)
    edited = block.group(0).replace("gamma = 1.0", "gamma = ${vars.gamma}")
    (tmp_path / "config.cfg").write_text(config.replace(block.group(0), edited) + "\n[vars]\ngamma = 1.0\n",
                                         encoding="utf-8")
    for overrides in ({"vars": {"gamma": 2.0}}, {"components": {"elmo": {"gamma": 2.0}}}):
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            loaded = spacy.load(tmp_path, config=overrides)
        assert loaded.get_pipe("elmo").cfg["gamma"] == 2.0


def test_nlp_pipe_with_spawned_workers_gives_the_single_process_vectors(allennlp_dir, tmp_path):
    """The real thing: two spawned workers (each imports torch and spaCy: seconds)."""
    import numpy

    nlp, _, _ = tagger_pipeline(allennlp_dir)
    texts = ["the cat sat on the mat", "a dog", "", "birds fly south in winter"]
    expected = [doc._.elmo for doc in nlp.pipe(texts)]
    method = multiprocessing.get_start_method()
    multiprocessing.set_start_method("spawn", force=True)
    try:
        found = [doc._.elmo for doc in nlp.pipe(texts, n_process=2, batch_size=1)]
    finally:
        multiprocessing.set_start_method(method, force=True)
    for a, b in zip(expected, found):
        numpy.testing.assert_array_equal(a, b)
