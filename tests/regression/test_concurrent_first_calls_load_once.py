"""Regression: threads whose first calls arrive together each loaded the biLM.

`ensure_weights` checked whether the model held a biLM and, if not, ran its loader, with nothing
between the two: eight threads making a fresh pipeline's first `nlp()` calls at once (a web
server's first requests) built eight whole biLMs, seven of them thrown away (every trial of the
review). The check is now repeated under the model's lock. The loader below blocks until a
second thread has either entered it (the old code) or tried to take the lock (the new), so the
order is decided by events, not by timing. The lock is the model's own: a slow load (a download)
of one model does not hold up another's.
"""
import threading

from spacy_elmo.bilm import BiLM, BiLMConfig
from spacy_elmo.layers import loaders
from spacy_elmo.layers.bilm_model import ElmoBiLM, has_bilm, set_bilm

SIZES = dict(lstm_dim=16, projection_dim=8, n_layers=1, filters=((1, 4), (2, 4)), n_highway=1)


class SignallingLock:
    """The loader lock, telling (through `second_arrived`) when a second thread tries to take it."""

    def __init__(self, second_arrived: threading.Event) -> None:
        self._lock, self._second_arrived, self._attempts = threading.RLock(), second_arrived, 0

    def __enter__(self):
        self._attempts += 1
        if self._attempts == 2:
            self._second_arrived.set()
        return self._lock.__enter__()

    def __exit__(self, *exc):
        return self._lock.__exit__(*exc)


def test_two_first_calls_load_the_biLM_once(monkeypatch):
    model = ElmoBiLM()
    assert not has_bilm(model)
    entered, second_arrived = threading.Event(), threading.Event()
    loads = []

    def blocking_loader(target):
        loads.append(threading.current_thread().name)
        if len(loads) == 1:
            entered.set()
            assert second_arrived.wait(60)  # the other thread is inside (old code) or at the lock (new)
        else:
            second_arrived.set()
        set_bilm(target, BiLM(BiLMConfig(**SIZES)))

    monkeypatch.setattr(loaders, "resolve_loader", lambda setting: blocking_loader)
    lock = SignallingLock(second_arrived)
    monkeypatch.setattr(loaders, "_load_lock", lambda model: lock)
    threads = [threading.Thread(target=loaders.ensure_weights, args=(model,), name=name)
               for name in ("first", "second")]
    threads[0].start()
    assert entered.wait(60)
    threads[1].start()
    for thread in threads:
        thread.join(60)
    assert loads == ["first"], loads
    assert has_bilm(model)


def test_a_slow_load_of_one_model_does_not_hold_up_another(monkeypatch):
    slow, fast = ElmoBiLM(), ElmoBiLM()
    inside, release = threading.Event(), threading.Event()

    def loader(target):
        if target is slow:
            inside.set()
            assert release.wait(60)
        set_bilm(target, BiLM(BiLMConfig(**SIZES)))

    monkeypatch.setattr(loaders, "resolve_loader", lambda setting: loader)
    waiting = threading.Thread(target=loaders.ensure_weights, args=(slow,))
    waiting.start()
    try:
        assert inside.wait(60)
        other = threading.Thread(target=loaders.ensure_weights, args=(fast,))
        other.start()
        other.join(60)  # a guard: with one lock for all models it waited for the slow load
        assert has_bilm(fast) and not has_bilm(slow)
    finally:
        release.set()
        waiting.join(60)
    assert has_bilm(slow)
