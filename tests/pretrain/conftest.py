from pathlib import Path

import pytest
import torch

TEACHER_WORDPIECES = ["the", "bank", "of", "river", "money", "in", "flow", "##s", "."]


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


@pytest.fixture(scope="module")
def teacher_dir(tmp_path_factory) -> Path:
    """A 2-layer, 16-wide random BERT with a tiny wordpiece vocabulary, saved as Hugging Face does."""
    pytest.importorskip("transformers", reason="distillation needs transformers (the distill extra)")
    from transformers import BertConfig, BertModel, BertTokenizerFast  # type: ignore[attr-defined]

    directory = tmp_path_factory.mktemp("teacher")
    vocab = directory / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + TEACHER_WORDPIECES) + "\n")
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=5 + len(TEACHER_WORDPIECES), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64,
    )
    BertModel(config).save_pretrained(directory)
    # positional: vocab_file (transformers 4) or vocab (5)
    BertTokenizerFast(str(vocab), do_lower_case=True).save_pretrained(directory)
    return directory
