"""Regression: `threads = N` stayed with Python threads started while another thread was predicting.

`torch.set_num_threads` sets the calling thread's count and a process-wide value each new thread
starts from. A thread started while another was inside `cpu_threads(N)` began with N, took N for
torch's setting, and "restored" N when its own call ended: in a web server's growing thread pool
the count stayed with those threads after every call had ended (5 of 6 worker threads in the
review). Every call now puts its thread back to torch's setting as it was before the first call
entered. Ordered with events, not sleeps.
"""
import threading

import torch

from spacy_elmo.threads import cpu_threads


def test_a_thread_started_during_a_call_ends_at_torchs_setting():
    before = torch.get_num_threads()
    other = before + 1
    inside, done = threading.Event(), threading.Event()
    seen = {}

    def worker():
        inside.wait()
        seen["at start"] = torch.get_num_threads()
        with cpu_threads(other) as n:
            seen["in call"] = (n, torch.get_num_threads())
        seen["after"] = torch.get_num_threads()
        done.set()

    thread = threading.Thread(target=worker)
    try:
        with cpu_threads(other):
            thread.start()
            inside.set()
            assert done.wait(60)
        thread.join(60)
    finally:
        torch.set_num_threads(before)
    assert seen["in call"] == (other, other)
    assert seen["after"] == before, seen
    assert torch.get_num_threads() == before


def test_torchs_own_setting_is_the_one_before_the_first_call():
    before = torch.get_num_threads()
    try:
        with cpu_threads(before + 2):
            with cpu_threads(0) as n:  # 0: torch's own setting, not the call's around it
                assert n == before
        assert torch.get_num_threads() == before
    finally:
        torch.set_num_threads(before)
