"""The teacher's vectors computed once for a corpus and read back (`[training.distill] cache`)."""
import json
import random

import numpy
import pytest
import torch

from spacy_elmo.pretrain import pretrain
from spacy_elmo.pretrain import teacher_cache
from spacy_elmo.pretrain.checkpoint import load_checkpoint
from spacy_elmo.pretrain.distill import DistillError, Teacher
from spacy_elmo.pretrain.settings import load_config
from spacy_elmo.pretrain.teacher_cache import CachedTeacher, build_cache, load_projection
from spacy_elmo.pretrain.text_corpus import TokenizedCorpus

pytest.importorskip("transformers", reason="distillation needs transformers (the distill extra)")


@pytest.fixture
def corpus(small_corpus, tmp_path) -> TokenizedCorpus:
    return TokenizedCorpus.prepare(small_corpus, tmp_path / "corpus-cache", progress=False)


def _segments(corpus):
    return list(corpus.segments())


def test_unprojected_vectors_are_the_teachers_in_float16(teacher_dir, corpus, tmp_path):
    teacher = Teacher(teacher_dir)
    cached = build_cache(teacher, corpus.segments, corpus.info, tmp_path / "cache", dim=0, progress=False)
    assert cached.dim == teacher.dim and load_projection(cached.directory) is None
    segments = _segments(corpus)
    random.Random(0).shuffle(segments)  # batches group and order segments in any way
    batch = segments[:40]
    live, live_mask = teacher.token_vectors(batch)
    read, mask = cached.token_vectors(batch)
    assert torch.equal(mask, live_mask)
    torch.testing.assert_close(read, live.half().float(), rtol=0, atol=0)


def test_projected_vectors_are_centred_on_the_leading_directions(teacher_dir, corpus, tmp_path):
    teacher = Teacher(teacher_dir)
    cached = build_cache(teacher, corpus.segments, corpus.info, tmp_path / "cache", dim=4, progress=False)
    assert cached.dim == 4 and cached.meta["projected"]
    mean, directions = load_projection(cached.directory)
    assert directions.shape == (teacher.dim, 4)
    numpy.testing.assert_allclose(directions.T @ directions, numpy.eye(4), atol=1e-5)  # orthonormal
    batch = _segments(corpus)[5:25]
    live, live_mask = teacher.token_vectors(batch)
    read, mask = cached.token_vectors(batch)
    assert torch.equal(mask, live_mask) and not bool(mask.all())  # tokens past the teacher's 64 positions
    expected = (live[mask].numpy() - mean) @ directions
    numpy.testing.assert_allclose(read[mask].numpy(), expected, rtol=2e-3, atol=2e-3)
    # the leading direction carries the most variance of the fitted sample
    variances = read.var(0)
    assert int(variances.argmax()) == 0


def test_a_sentence_outside_the_corpus_is_an_error(teacher_dir, corpus, tmp_path):
    cached = build_cache(Teacher(teacher_dir), corpus.segments, corpus.info, tmp_path / "cache", progress=False)
    with pytest.raises(DistillError, match="another corpus"):
        cached.token_vectors([["never", "seen", "sentence"]])


def test_a_complete_cache_is_reused_and_other_settings_build_their_own(teacher_dir, corpus, tmp_path, monkeypatch):
    teacher = Teacher(teacher_dir)
    first = build_cache(teacher, corpus.segments, corpus.info, tmp_path / "cache", dim=4, progress=False)

    def refuse(sentences):
        raise AssertionError("the teacher ran although its vectors are cached")

    monkeypatch.setattr(teacher, "token_vectors", refuse)
    again = build_cache(teacher, corpus.segments, corpus.info, tmp_path / "cache", dim=4, progress=False)
    assert again.directory == first.directory
    monkeypatch.undo()
    other = build_cache(Teacher(teacher_dir, layer=1), corpus.segments, corpus.info, tmp_path / "cache", dim=4,
                        progress=False)
    wider = build_cache(teacher, corpus.segments, corpus.info, tmp_path / "cache", dim=8, progress=False)
    assert len({first.directory, other.directory, wider.directory}) == 3


def test_an_interrupted_build_continues_where_it_stopped(teacher_dir, corpus, tmp_path, monkeypatch, inject):
    monkeypatch.setattr(teacher_cache, "BATCH_TOKENS", 200)
    monkeypatch.setattr(teacher_cache, "PROGRESS_EVERY", 2)
    teacher = Teacher(teacher_dir)
    clean = build_cache(teacher, corpus.segments, corpus.info, tmp_path / "clean", dim=4, progress=False)
    calls = []
    live = teacher.token_vectors
    monkeypatch.setattr(teacher, "token_vectors", lambda sentences: calls.append(1) or live(sentences))
    inject("teacher_cache.batch:5:enospc")  # the fifth batch written, the fourth recorded as done
    with pytest.raises(OSError):
        build_cache(teacher, corpus.segments, corpus.info, tmp_path / "cache", dim=4, progress=False)
    assert not any((tmp_path / "cache").glob("[!.]*"))  # nothing looks complete
    inject("")
    first_calls = len(calls)
    calls.clear()
    resumed = build_cache(teacher, corpus.segments, corpus.info, tmp_path / "cache", dim=4, progress=False)
    n_batches = len(list(teacher_cache._batches(corpus.segments(), 200)))
    # the projection's fit (on the whole of this small corpus), then five batches
    assert first_calls == n_batches + 5
    assert len(calls) == n_batches - 4  # the projection read back, the batches after the fourth
    assert not any((tmp_path / "cache").glob(".*.partial"))
    for name in ("keys.npy", "starts.npy"):
        assert numpy.array_equal(numpy.load(clean.directory / name), numpy.load(resumed.directory / name))
    rows = clean.meta["rows"]
    assert numpy.array_equal(clean.vectors[:rows], resumed.vectors[:rows], equal_nan=True)


def test_pretraining_reads_the_cache(tiny_config_path, small_corpus, teacher_dir, tmp_path, monkeypatch):
    settings = {"paths.train": str(small_corpus), "paths.dev": str(small_corpus), "training.max_steps": 3,
                "training.eval_every": 3, "training.checkpoint_every": 2, "training.threads": 1,
                "corpus.dev_max_tokens": 300, "training.distill.teacher": str(teacher_dir),
                "training.distill.cache": str(tmp_path / "teacher-cache"), "training.distill.cache_dim": 4}
    result = pretrain(load_config(tiny_config_path, settings), tmp_path / "run", progress=False)
    assert result["step"] == 3
    state = load_checkpoint(tmp_path / "run" / "checkpoint.pt")
    assert state["distill"]["map.weight"].shape[0] == 4  # the map regresses the projected vectors
    rows = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert all(numpy.isfinite(row["train_distill_loss"]) for row in rows if "train_distill_loss" in row)
    meta = json.loads((tmp_path / "run" / "model-last" / "elmo.json").read_text())
    assert meta["metadata"]["distill"]["teacher_dir"] == str(teacher_dir)

    # a second run reads the vectors: the teacher never runs
    def refuse(self, sentences):
        raise AssertionError("the teacher ran although its vectors are cached")

    monkeypatch.setattr(Teacher, "token_vectors", refuse)
    again = pretrain(load_config(tiny_config_path, settings), tmp_path / "again", progress=False)
    assert again["step"] == 3
    assert isinstance(CachedTeacher(next((tmp_path / "teacher-cache").iterdir())), CachedTeacher)
