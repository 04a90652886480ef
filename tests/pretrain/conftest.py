from pathlib import Path

import pytest


@pytest.fixture
def train_text(bilm_tf_dir) -> Path:
    return bilm_tf_dir / "train" / "data.txt"
