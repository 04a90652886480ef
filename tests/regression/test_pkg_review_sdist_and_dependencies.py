"""Regression: what a package index would get.

The sdist held a broken part of the test suite (setuptools adds `tests/test*.py` by default: 16 files
without their conftest, data or the scripts they import), and the package imported `fsspec` (URL
inputs of `embed`) and `requests` (downloads) without declaring them: they arrived only as torch's
and pooch's dependencies.
"""
import ast
import configparser
import subprocess
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]


def test_the_sdist_holds_the_package_and_no_tests(tmp_path):
    subprocess.run([sys.executable, "setup.py", "-q", "egg_info", "--egg-base", str(tmp_path)], cwd=ROOT,
                   check=True, capture_output=True)
    sources = (tmp_path / "spacy_elmo.egg-info" / "SOURCES.txt").read_text().split()
    assert not [name for name in sources if name.startswith("tests/")]
    for needed in ("spacy_elmo/models/en_elmo_2x512_128/bilm.safetensors", "spacy_elmo/io/catalogue.json",
                   "spacy_elmo/bilm/engine/_lstm_cell.c", "spacy_elmo/py.typed", "LICENSE", "README.md"):
        assert needed in sources, needed


def test_every_third_party_import_is_declared():
    imported = set()
    for path in (ROOT / "spacy_elmo").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    imported -= set(sys.stdlib_module_names) | {"spacy_elmo"}
    options = configparser.ConfigParser()
    options.read(ROOT / "setup.cfg")
    lines = options["options"]["install_requires"].splitlines()
    lines += [line for extra in options["options.extras_require"].values() for line in extra.splitlines()]
    declared = {Requirement(line).name.lower() for line in lines if line.strip() and not line.startswith("#")}
    distributions = packages_distributions()
    undeclared = {module for module in imported
                  if not any(d.lower() in declared for d in distributions.get(module, [module]))}
    assert not undeclared
