"""DESIGN.md's one-way dependency: the biLM, the weight formats and pretraining import neither spaCy nor thinc,
and the biLM imports none of the layers below it.

Checked in a fresh interpreter, so that modules other tests imported do not hide an import.
"""
import ast
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
    "spacy_elmo.bilm.vocab",
    "spacy_elmo.io",
    "spacy_elmo.io.manylangs",
    "spacy_elmo.io.sources",
    "spacy_elmo.io.native",
    "spacy_elmo.io.token_vocabularies",
    "spacy_elmo.io.options",
    "spacy_elmo.io.published",
    "spacy_elmo.io.saved_pipeline",
    "spacy_elmo.machine",
    "spacy_elmo.progress_bars",
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


BELOW_BILM = ("io", "layers", "pipeline", "pretrain", "embedding", "cli", "resources")


def _imported_packages(path: Path) -> set:
    """The spacy_elmo sub-packages a module of spacy_elmo/bilm imports (relative or absolute)."""
    found = set()
    depth = len(path.relative_to(PACKAGE).parts) - 1  # folders below spacy_elmo/
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level > depth:  # relative, above spacy_elmo/bilm
            found.update([node.module.split(".")[0]] if node.module else [a.name for a in node.names])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("spacy_elmo."):
            assert node.module is not None
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("spacy_elmo."))
    return found


@pytest.mark.parametrize("path", sorted((PACKAGE / "bilm").rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_bilm_imports_nothing_below_it(path):
    assert not _imported_packages(path) & set(BELOW_BILM), f"{path.name} imports a layer that depends on the biLM"
