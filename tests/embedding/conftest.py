"""The embedding tests' inputs: one small file in each format `embed` reads."""
from pathlib import Path

import pytest

from .inputs_data import write_all


@pytest.fixture
def inputs_dir(tmp_path) -> Path:
    directory = tmp_path / "inputs"
    directory.mkdir()
    write_all(directory)
    return directory
