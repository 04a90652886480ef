"""Regression: the transformer teacher of `[training.distill]` on teachers and inputs the suite had
not tried.

- A teacher directory without its tokenizer files loaded a tokenizer of the special tokens alone
  (transformers 5): every word read as [UNK], and pretraining trained on targets that depend only
  on position, with exit 0. Refused now, naming the missing files.
- A byte-level BPE teacher (RoBERTa-style) read each word given apart without its leading space:
  "bank" as "ban" "k" continuing the previous word, not "Ġbank". It now gets its prefix space.
- `teacher = ../missing` was importlib's TypeError as a traceback; a directory that is not a model,
  a multi-line message; an ImportError of a tokenizer's dependency, a traceback. One line each.
- A word whose wordpieces `max_wordpieces` cut ("Rivers" = river ##s, only "river" kept) stayed in
  the loss with part of its pieces; the docstring and docs say it is left out.
- A teacher cache built before these changes is not reused (the cache key names the alignment).
"""
import shutil

import pytest

from spacy_elmo.pretrain.distill import DistillError, Teacher, resolve_teacher


def test_a_teacher_without_its_tokenizer_is_refused(teacher_dir, tmp_path):
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(teacher_dir / name, bare / name)
    with pytest.raises(DistillError, match="tokenizer's files .* are missing"):
        Teacher(bare)


@pytest.mark.parametrize("name", ["../missing", "./missing", "~/no-such-teacher-dir"])
def test_a_missing_path_is_one_line(name):
    with pytest.raises(DistillError, match="no such directory"):
        resolve_teacher(name)


def test_a_directory_that_is_not_a_model_is_one_line(tmp_path):
    (tmp_path / "readme.txt").write_text("hi")
    with pytest.raises(DistillError, match=r"not a Hugging Face model directory \(no config.json\)"):
        Teacher(tmp_path)


def test_a_word_cut_by_max_wordpieces_is_left_out(teacher_dir):
    teacher = Teacher(teacher_dir, max_wordpieces=5)  # [CLS] the bank river | ##s [SEP]: cut
    _, mask = teacher.token_vectors([["the", "bank", "rivers"], ["the", "bank"]])
    assert mask.tolist() == [True, True, False, True, True]


def test_a_byte_level_bpe_teacher_reads_words_with_their_space(tmp_path):
    pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    import torch
    from transformers import RobertaConfig, RobertaModel, RobertaTokenizerFast  # type: ignore[attr-defined]

    bpe = tokenizers.ByteLevelBPETokenizer()
    bpe.train_from_iterator(["the bank of the river flows", "money in the bank"] * 10, vocab_size=300,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(tmp_path))
    tokenizer = RobertaTokenizerFast(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt"))
    tokenizer.save_pretrained(tmp_path)
    assert tokenizer.add_prefix_space is False  # as roberta-base ships
    torch.manual_seed(0)
    config = RobertaConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                           intermediate_size=32, max_position_embeddings=66, pad_token_id=1)
    RobertaModel(config).save_pretrained(tmp_path)
    teacher = Teacher(tmp_path)
    words = ["the", "bank", "of", "the", "river"]
    split = teacher.tokenizer([words], is_split_into_words=True)
    pieces = teacher.tokenizer.convert_ids_to_tokens(split["input_ids"][0])
    assert pieces[1:-1] == [f"Ġ{word}" for word in words]
    vectors, mask = teacher.token_vectors([words])
    assert vectors.shape == (5, 16) and mask.all()


def test_a_cache_whose_vectors_were_cut_short_is_named(tmp_path):
    """numpy's bare "mmap length is greater than file size" before."""
    import json

    import numpy

    from spacy_elmo.pretrain.teacher_cache import CachedTeacher

    (tmp_path / "meta.json").write_text(json.dumps({"dim": 4, "rows": 10}))
    numpy.save(tmp_path / "keys.npy", numpy.zeros(1, dtype=numpy.int64))
    numpy.save(tmp_path / "starts.npy", numpy.zeros(1, dtype=numpy.int64))
    (tmp_path / "vectors.f16").write_bytes(b"\0" * 6)
    with pytest.raises(DistillError, match="not a complete teacher cache"):
        CachedTeacher(tmp_path)
