"""An installed spaCy pipeline package as a model source, found by its package name.

`spacy package` (then `pip install`) puts a pipeline in a Python package:
`NAME/__init__.py`, `NAME/meta.json` and the pipeline itself in
`NAME/NAME-VERSION/` (`config.cfg`, `meta.json`, one folder per component).
`installed_pipeline("en_elmo_tagger")` returns that inner folder, so the biLM
such a package holds loads wherever a model does, as `spacy.load` finds the
pipeline by the same name. The package is located, never imported: its
`__init__.py` imports spaCy, and a saved pipeline's biLM is read without it
(`saved_pipeline`).
"""
import importlib.util
import json
from pathlib import Path
from typing import Iterable, Optional

from .saved_pipeline import is_pipeline_root


def installed_pipeline(name: str) -> Optional[Path]:
    """The pipeline folder of the installed package `name`, or None where `name` is no such package."""
    if not name.isidentifier():
        return None
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        folder = _pipeline_folder(Path(location))
        if folder is not None:
            return folder
    return None


def _pipeline_folder(package: Path) -> Optional[Path]:
    """`package` itself where it holds a pipeline; else the folder its meta.json names (`LANG_NAME-VERSION`,
    as spaCy's `load_model_from_init_py` reads it); else its only subfolder that holds one."""
    if is_pipeline_root(package):
        return package
    named = _named_by_meta(package)
    if named is not None and is_pipeline_root(named):
        return named
    inner = [child for child in _subfolders(package) if is_pipeline_root(child)]
    return inner[0] if len(inner) == 1 else None


def _named_by_meta(package: Path) -> Optional[Path]:
    try:
        meta = json.loads((package / "meta.json").read_text(encoding="utf-8"))
        return package / f"{meta['lang']}_{meta['name']}-{meta['version']}"
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _subfolders(package: Path) -> Iterable[Path]:
    try:
        return sorted(child for child in package.iterdir() if child.is_dir())
    except OSError:
        return []
