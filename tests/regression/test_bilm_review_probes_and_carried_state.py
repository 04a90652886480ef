"""Regression: a review of the biLM core found two settings of the caller that outlived their call.

- The fast backends are checked once per process with a small product. Checked first under
  `torch.autocast("cpu")` (the reference product came back in bfloat16) or a float64 default dtype
  (the operators refused the inputs), the check failed, and oneDNN (and int8) stayed off for the
  whole process: `auto` silently chose a slower backend, and an explicit one was refused.
- In `stateful` mode the carried state kept its old dtype (and device) after `.double()` / `.to()`:
  every later call's state was rounded back to float32.
"""
import subprocess
import sys

import torch

from spacy_elmo.bilm import LSTMState

AVAILABLE = "from spacy_elmo.bilm.engine import backends; print(sorted(backends.available()))"


def _available(prelude: str) -> str:
    code = f"import torch\n{prelude}\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_the_backend_check_ignores_the_callers_autocast_and_default_dtype():
    clean = _available(AVAILABLE)
    under_autocast = _available("with torch.autocast('cpu', dtype=torch.bfloat16):\n    " + AVAILABLE.replace(
        "; ", "\n    "))
    under_float64 = _available("torch.set_default_dtype(torch.float64)\n" + AVAILABLE.replace("; ", "\n"))
    assert under_autocast == clean and under_float64 == clean


def test_the_carried_state_follows_the_model_to_float64(allennlp_bilm):
    import copy

    model = copy.deepcopy(allennlp_bilm)
    model.stateful = True
    batch = [["The", "cat", "sat", "."], ["a", "b"]]
    with torch.no_grad():
        model(batch)
        model.double()
        carried = model._carried
        assert isinstance(carried, LSTMState) and carried.h[0].dtype == torch.float64
        model(batch)
        assert model._carried.h[0].dtype == torch.float64 and model._carried.c[-1].dtype == torch.float64
