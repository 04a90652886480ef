"""The component's `threads` setting: torch's own by default; N; or "load-aware".

"load-aware" predicts with fewer threads when other processes keep cores busy
(on 2 cores beside one other CPU-bound process, torch's 2 threads are much
slower than 1: benchmarks/bench_load.py). The load is simulated here (a
stand-in for /proc/stat and the clocks), so nothing depends on this
machine's speed or on what else runs on it.
"""
import warnings

import pytest
import spacy
import torch

from spacy_elmo import threads
from spacy_elmo.bilm.model import BiLM
from spacy_elmo.threads import LOAD_AWARE, FreeCores, check_threads, cpu_threads, threads_for_call


class FakeMachine:
    """/proc/stat, the wall clock and this process's CPU clock, advanced by hand."""

    def __init__(self, monkeypatch, cores: int = 2) -> None:
        self.wall = self.busy = self.own = 0.0
        monkeypatch.setattr(threads, "_machine_busy_seconds", lambda: self.busy)
        monkeypatch.setattr(threads, "_wall_clock", lambda: self.wall)
        monkeypatch.setattr(threads, "_own_cpu_clock", lambda: self.own)
        monkeypatch.setattr(threads, "_machine_cores", lambda: cores)
        monkeypatch.setattr(threads, "_usable_cores", lambda: cores)

    def run(self, seconds: float, own_cores: float, other_cores: float) -> None:
        self.wall += seconds
        self.own += seconds * own_cores
        self.busy += seconds * (own_cores + other_cores)


@pytest.fixture
def two_threads():
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(previous)


def test_load_aware_leaves_busy_cores_alone(monkeypatch, two_threads):
    machine = FakeMachine(monkeypatch)
    monitor = FreeCores()
    assert threads_for_call(LOAD_AWARE, monitor) == 1  # no window measured yet: one thread
    machine.run(1.0, own_cores=1.0, other_cores=0.0)  # idle apart from us
    assert threads_for_call(LOAD_AWARE, monitor) == 2
    machine.run(1.0, own_cores=2.0, other_cores=1.0)  # another process takes a whole core
    assert threads_for_call(LOAD_AWARE, monitor) == 1
    machine.run(1.0, own_cores=1.0, other_cores=0.5)  # half a core busy: still left alone
    assert threads_for_call(LOAD_AWARE, monitor) == 1
    machine.run(1.0, own_cores=1.0, other_cores=0.1)  # the other process is gone
    assert threads_for_call(LOAD_AWARE, monitor) == 2
    machine.run(0.1, own_cores=1.0, other_cores=1.0)  # shorter than a window: the last estimate stands
    assert threads_for_call(LOAD_AWARE, monitor) == 2


def test_load_aware_never_exceeds_torch_setting(monkeypatch):
    machine = FakeMachine(monkeypatch, cores=8)
    monitor = FreeCores()
    threads_for_call(LOAD_AWARE, monitor)
    machine.run(1.0, own_cores=1.0, other_cores=0.0)
    previous = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        assert threads_for_call(LOAD_AWARE, monitor) == 3
    finally:
        torch.set_num_threads(previous)


def test_load_aware_without_proc_stat_is_torch_setting(monkeypatch, two_threads):
    monkeypatch.setattr(threads, "_machine_busy_seconds", lambda: None)
    assert threads_for_call(LOAD_AWARE, FreeCores()) == 2


def test_fixed_settings(two_threads):
    assert threads_for_call(0) == 2 and threads_for_call(1) == 1 and threads_for_call(4) == 4


def test_the_count_applies_inside_the_block_only(two_threads):
    with cpu_threads(1) as n:
        assert n == 1 and torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
    with pytest.raises(RuntimeError):
        with cpu_threads(1):
            raise RuntimeError("boom")
    assert torch.get_num_threads() == 2


@pytest.mark.parametrize("bad", [-1, "many", True, 1.5, None])
def test_bad_settings(bad):
    with pytest.raises(ValueError, match="threads must be"):
        check_threads(bad)


def _record_prediction_threads(monkeypatch):
    """The torch thread count at each of the component's predictions, as a list filled as they come."""
    seen = []
    real = BiLM.embed_batches

    def recording(self, *args, **kwargs):
        seen.append(torch.get_num_threads())
        return real(self, *args, **kwargs)

    monkeypatch.setattr(BiLM, "embed_batches", recording)
    return seen


def test_component_predicts_with_its_setting(allennlp_dir, monkeypatch, two_threads):
    seen = _record_prediction_threads(monkeypatch)
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir), "threads": 1})
    doc = nlp("The bank of the river .")
    assert seen == [1] and torch.get_num_threads() == 2 and doc._.elmo.shape == (3, 6, 32)
    assert nlp.get_pipe("elmo").cfg["threads"] == 1


def test_component_default_is_torch_setting_and_bad_values_are_refused(allennlp_dir, monkeypatch, two_threads):
    """The default reads no /proc/stat: torch's setting holds, whatever the machine's load looks like."""
    monkeypatch.setattr(threads, "_machine_busy_seconds", _never_sampled)
    nlp = spacy.blank("en")
    elmo = nlp.add_pipe("elmo", config={"weights": str(allennlp_dir)})
    assert elmo.cfg["threads"] == 0
    assert nlp.config["components"]["elmo"]["threads"] == 0
    seen = _record_prediction_threads(monkeypatch)
    nlp("The bank of the river .")
    assert seen == [2]
    with pytest.raises(ValueError, match="threads must be"):
        spacy.blank("en").add_pipe("elmo", config={"weights": str(allennlp_dir), "threads": "many"})


def _never_sampled():
    raise AssertionError("/proc/stat was read outside the load-aware mode")


def test_auto_is_a_deprecated_name_of_load_aware(allennlp_dir, monkeypatch):
    """Pipelines saved while "auto" was the default carry it in their config: they still load, and are told."""
    monkeypatch.setattr(threads, "_WARNED", set())
    with pytest.warns(FutureWarning, match="deprecated"):
        assert check_threads("auto") == LOAD_AWARE
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_threads("auto") == LOAD_AWARE  # warned once per process
    elmo = spacy.blank("en").add_pipe("elmo", config={"weights": str(allennlp_dir), "threads": "auto"})
    assert elmo.cfg["threads"] == LOAD_AWARE


def test_a_saved_cfg_with_the_old_spelling_still_predicts(monkeypatch, two_threads):
    """from_disk restores cfg as saved: "auto" there counts as "load-aware"."""
    FakeMachine(monkeypatch)
    assert threads_for_call("auto", FreeCores()) == 1  # the load-aware first window
