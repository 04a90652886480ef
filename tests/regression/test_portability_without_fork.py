"""Regression: the package imports where Python has no `os.register_at_fork` (Windows).

Most modules registered their after-fork hooks only where the function exists; `io/atomic.py` and
`pipeline/component.py` called it unconditionally, so `import spacy_elmo` (which imports the former)
raised AttributeError on Windows before anything ran.
"""
import subprocess
import sys

_PROBE = """
import os
import spacy, thinc.api, torch, torch.multiprocessing  # on Linux these register their own hooks on import
del os.register_at_fork
import spacy_elmo, spacy_elmo.io.atomic, spacy_elmo.pipeline.component
nlp = spacy.blank("en")
nlp.add_pipe("elmo")
print(nlp("It works.")._.elmo.shape)
"""


def test_the_package_imports_and_runs_without_register_at_fork():
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().startswith("(3, 3,")  # layers, tokens, width
