"""A RoBERTa-style teacher must not crash on a sentence as long as its position table.

The bug: `Teacher` capped `max_wordpieces` at the config's `max_position_embeddings`,
but RoBERTa-style encoders number positions from their padding index + 1 (roberta-base:
514 positions, 512 wordpieces). A sentence reaching the cap indexed past the position
table: an IndexError (a traceback) in the middle of pretraining. The cap now takes the
offset off, and the tokenizer's `model_max_length` where it sets one.
"""
import pytest
import torch

from spacy_elmo.pretrain.distill import Teacher, usable_positions


@pytest.fixture(scope="module")
def roberta_teacher(tmp_path_factory):
    pytest.importorskip("transformers", reason="distillation needs transformers (the distill extra)")
    from transformers import BertTokenizerFast, RobertaConfig, RobertaModel  # type: ignore[attr-defined]

    directory = tmp_path_factory.mktemp("roberta")
    vocab = directory / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "bank", "."]) + "\n")
    torch.manual_seed(0)
    config = RobertaConfig(vocab_size=8, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                           intermediate_size=32, max_position_embeddings=12, pad_token_id=0)
    RobertaModel(config).save_pretrained(directory)
    BertTokenizerFast(str(vocab), do_lower_case=True).save_pretrained(directory)
    return directory


def test_a_long_sentence_is_cut_at_the_positions_the_teacher_has(roberta_teacher):
    teacher = Teacher(roberta_teacher, max_wordpieces=256)
    assert teacher.max_wordpieces == 12 - 1  # positions 1..11 after the padding index 0
    vectors, mask = teacher.token_vectors([["the"] * 30, ["bank", "."]])
    assert mask.tolist() == [True] * 9 + [False] * 21 + [True, True]  # [CLS] + 9 tokens + [SEP]
    assert torch.isfinite(vectors).all()


def test_a_bert_teacher_keeps_all_its_positions(teacher_dir):
    teacher = Teacher(teacher_dir, max_wordpieces=256)
    assert teacher.max_wordpieces == 64 == usable_positions(teacher.model, teacher.tokenizer, 256)
