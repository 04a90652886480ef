"""Regression: state kept for threads sharing a model went into forked children (spaCy's `n_process`).

This session's locks and counts for threads sharing a model were copied by `fork` as they were: a
child forked while another thread was loading the model's weights found the model's load lock
held forever (its first prediction hung); one forked while another thread predicted kept that
call's thread setting (the worker told to use one thread used two); and a module put in eval
mode by an `embed` under way stayed so. Each child now starts with fresh locks and no calls, the
modules back in their mode. The parent's threads hold the state across the fork, ordered by
events; the child reports through its exit status.
"""
import os
import threading

import pytest
import torch

from spacy_elmo.bilm.engine import bulk
from spacy_elmo.layers import loaders
from spacy_elmo.layers.bilm_model import ElmoBiLM
from spacy_elmo import threads

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _fork_while(hold, child_check) -> int:
    """Run `hold(inside, release)` in a thread; fork once it is inside; the child's exit status."""
    inside, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=hold, args=(inside, release))
    holder.start()
    try:
        assert inside.wait(60)
        pid = os.fork()
        if pid == 0:  # the child: no pytest from here on
            try:
                os._exit(0 if child_check() else 1)
            except BaseException:
                os._exit(2)
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status)
    finally:
        release.set()
        holder.join(60)


def test_a_child_forked_during_a_load_can_load():
    model = ElmoBiLM()

    def hold(inside, release):
        with loaders._load_lock(model):
            inside.set()
            release.wait(60)

    def child():
        lock = loaders._load_lock(model)
        taken = lock.acquire(blocking=False)
        return taken

    assert _fork_while(hold, child) == 0


def test_a_child_forked_during_a_call_counts_no_call():
    before = torch.get_num_threads()

    def hold(inside, release):
        with threads.cpu_threads(before + 1):
            inside.set()
            release.wait(60)

    def child():
        with threads.cpu_threads(0) as n:  # torch's own setting: the child's, not the parent's call's
            return threads._active_calls == 1 and n == torch.get_num_threads()

    assert _fork_while(hold, child) == 0
    assert torch.get_num_threads() == before


def test_a_child_forked_during_an_embed_has_the_modules_mode_back():
    module = torch.nn.Linear(2, 2)
    module.train()

    def hold(inside, release):
        with bulk.evaluating(module):
            inside.set()
            release.wait(60)

    def child():
        return module.training and not bulk._MODE_CALLS

    assert _fork_while(hold, child) == 0
    assert module.training
