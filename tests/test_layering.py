"""DESIGN.md's one-way dependency: the biLM, the weight formats and pretraining import neither spaCy nor thinc.

Checked in a fresh interpreter, so that modules other tests imported do not hide an import.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "spacy_elmo"
# every pretraining module, so that a new one is checked too (found on disk, not by importing)
PRETRAIN = ["spacy_elmo.pretrain"] + sorted(
    f"spacy_elmo.pretrain.{path.stem}" for path in (PACKAGE / "pretrain").glob("*.py") if path.stem != "__init__"
)

WITHOUT_SPACY = [
    "spacy_elmo.bilm",
    "spacy_elmo.bilm.model",
    "spacy_elmo.bilm.language_model",
    "spacy_elmo.bilm.token_vocab",
    "spacy_elmo.io",
    "spacy_elmo.io.manylangs",
    "spacy_elmo.io.sources",
    "spacy_elmo.io.native",
    "spacy_elmo.io.published",
    *PRETRAIN,
]

_PROBE = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("spacy", "thinc"))))
"""


@pytest.mark.parametrize("module", WITHOUT_SPACY)
def test_module_imports_no_spacy_or_thinc(module):
    out = subprocess.run([sys.executable, "-c", _PROBE, module], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [], f"{module} pulls in spaCy or thinc"
