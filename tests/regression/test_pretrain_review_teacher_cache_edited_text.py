"""Regression: a teacher cache was reused for training text edited in place.

Its key held the corpus files' names and the corpus's counts only, where the corpus cache's own key
holds each file's size and modification time: a file edited with the same numbers of segments,
tokens and word types (two words swapped) got a new corpus cache and the old teacher cache, and
training failed hours in ("no vectors for the sentence ..."). The key now holds the files' size
and modification time too.
"""
import os

import pytest


def test_an_edited_corpus_file_gets_another_teacher_cache(teacher_dir, tmp_path):
    pytest.importorskip("transformers", reason="distillation needs transformers (the distill extra)")
    from spacy_elmo.pretrain.distill import Teacher
    from spacy_elmo.pretrain.teacher_cache import cache_key

    text = tmp_path / "train.txt"
    text.write_text("the cat sat\nthe dog ran\n", encoding="utf-8")
    teacher = Teacher(teacher_dir)
    info = {"files": [str(text)], "lang": "en", "tokenizer": "spacy", "max_length": 64, "segments": 2,
            "tokens": 6, "types": 5, "version": 2}
    before = cache_key(teacher, info, 4)
    assert cache_key(teacher, info, 4) == before  # the same file: the same cache
    stat = text.stat()
    text.write_text("the dog sat\nthe cat ran\n", encoding="utf-8")  # same size, same counts
    os.utime(text, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert cache_key(teacher, info, 4) != before
