from pathlib import Path

import pytest


@pytest.fixture
def train_text(bilm_tf_dir) -> Path:
    return bilm_tf_dir / "train" / "data.txt"


@pytest.fixture
def without_spacy_env(tmp_path) -> dict:
    """Environment variables for a child Python in which `import spacy` and `import thinc` fail,
    as on a machine that has neither installed."""
    import os

    blocked = tmp_path / "no-spacy"
    for name in ("spacy", "thinc"):
        (blocked / name).mkdir(parents=True)
        (blocked / name / "__init__.py").write_text(f"raise ImportError('{name} is not installed here')\n")
    path = os.pathsep.join(p for p in (str(blocked), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}
