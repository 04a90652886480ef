from pathlib import Path

import pytest

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


@pytest.fixture
def tiny_config_path() -> Path:
    return CONFIGS / "pretrain_tiny.cfg"


@pytest.fixture
def train_text(bilm_tf_dir) -> Path:
    return bilm_tf_dir / "train" / "data.txt"


@pytest.fixture
def small_corpus(tmp_path, data_dir) -> Path:
    """About 3,000 tokens of the heldout pretraining text."""
    import gzip

    lines = []
    with gzip.open(data_dir / "pretrain_en" / "heldout.txt.gz", "rt", encoding="utf-8") as f:
        for line in f:
            lines.append(line)
            if len(lines) >= 120:
                break
    path = tmp_path / "corpus.txt"
    path.write_text("".join(lines), encoding="utf-8")
    return path
