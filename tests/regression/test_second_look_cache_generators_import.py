"""Regression: a second look at the fifth session's fixes.

The corpus cache went to version 2 (tokens with a space, text after a byte-order mark read anew), but
the teacher cache's key held the corpus's files and counts only: a teacher cache built over a version-1
corpus was reused over version 2 at the same counts, and the run failed well into its epoch ("no
vectors for the sentence ..."). `check_sentences` read an iterator of sentences to check it, so
`index_rows` (train mode, `keep_boundaries`, stateful mode) then got nothing and returned an empty
batch, silently. And `torch.compiler.disable` on `BiLM.forward` imported torch._dynamo with the
package: 1.5 s more for every command, `spacy.load` and worker.
"""
import subprocess
import sys

import pytest

from spacy_elmo.bilm.layout import index_rows

SENTENCES = [["She", "sat", "on", "the", "bank"], ["It", "rose"]]


def test_the_teacher_cache_key_holds_the_corpus_cache_version(teacher_dir):
    pytest.importorskip("transformers", reason="distillation needs transformers (the distill extra)")
    from spacy_elmo.pretrain.distill import Teacher
    from spacy_elmo.pretrain.teacher_cache import cache_key

    teacher = Teacher(teacher_dir)
    info = {"files": ["x"], "lang": "en", "tokenizer": "spacy", "max_length": 64, "segments": 3, "tokens": 9}
    assert cache_key(teacher, {**info, "version": 1}, 4) != cache_key(teacher, {**info, "version": 2}, 4)


def test_sentences_given_as_an_iterator_are_all_read():
    tokens, index, lengths = index_rows(iter(SENTENCES), with_boundaries=True)
    assert lengths == [7, 4] and index.shape == (2, 2, 7)


def test_a_biLM_forward_reads_an_iterator_in_each_mode():
    from spacy_elmo import load_bilm

    bilm = load_bilm()
    expected = bilm(SENTENCES, keep_boundaries=True).lengths.tolist()
    assert bilm((s for s in SENTENCES), keep_boundaries=True).lengths.tolist() == expected == [7, 4]
    bilm.train()
    assert bilm(map(list, SENTENCES)).lengths.tolist() == [5, 2]


def test_the_package_and_a_pipeline_do_not_import_dynamo():
    code = ("import sys, spacy, spacy_elmo\n"
            "nlp = spacy.blank('en'); nlp.add_pipe('elmo'); nlp('a b c')\n"
            "sys.exit(int('torch._dynamo' in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
