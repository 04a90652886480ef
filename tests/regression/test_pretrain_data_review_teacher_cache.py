"""Regression: the teacher cache outlived its teacher, and a torn progress record broke every later build.

The cache key named the teacher by its resolved directory alone, so a teacher overwritten in place
(new weights, same path) silently reused the old teacher's vectors. And the build's progress record
was written with a plain `write_text`: a kill mid-write left progress.json empty, and every later build
failed with "Expecting value: line 1 column 1" and no path. The key now holds a fingerprint of the
teacher's files (small files by content, the weights by size and mtime), the record is replaced
atomically, and a record that cannot be read starts the build again.
"""
import errno
import os
import shutil
from pathlib import Path

import numpy
import pytest

from spacy_elmo.pretrain import teacher_cache
from spacy_elmo.pretrain.teacher_cache import build_cache, cache_key
from spacy_elmo.pretrain.text_corpus import TokenizedCorpus

pytest.importorskip("transformers", reason="distillation needs transformers (the distill extra)")

from spacy_elmo.pretrain.distill import Teacher  # noqa: E402


@pytest.fixture
def corpus(small_corpus, tmp_path) -> TokenizedCorpus:
    return TokenizedCorpus.prepare(small_corpus, tmp_path / "corpus-cache", progress=False)


@pytest.fixture
def own_teacher(teacher_dir, tmp_path) -> Path:
    """A copy of the tiny teacher that a test may overwrite (the fixture is shared by the module)."""
    return Path(shutil.copytree(teacher_dir, tmp_path / "teacher"))


def _overwrite_weights(directory: Path, seed: int) -> None:
    """Save another random model of the same shape into `directory`, as a retrained teacher would be."""
    import torch
    from transformers import AutoConfig, AutoModel

    torch.manual_seed(seed)
    AutoModel.from_config(AutoConfig.from_pretrained(directory)).save_pretrained(directory)


def test_a_teacher_overwritten_in_place_builds_a_new_cache(own_teacher, corpus, tmp_path):
    first = build_cache(Teacher(own_teacher), corpus.segments, corpus.info, tmp_path / "cache", dim=0,
                        progress=False)
    _overwrite_weights(own_teacher, seed=7)
    teacher = Teacher(own_teacher)
    second = build_cache(teacher, corpus.segments, corpus.info, tmp_path / "cache", dim=0, progress=False)
    assert second.directory != first.directory
    segments = list(corpus.segments())[:10]
    live, mask = teacher.token_vectors(segments)
    read, read_mask = second.token_vectors(segments)
    assert bool((read_mask == mask).all())
    numpy.testing.assert_array_equal(read[mask].numpy(), live[mask].half().float().numpy())  # the new teacher's
    old, _ = first.token_vectors(segments)
    assert not numpy.array_equal(old[mask].numpy(), read[mask].numpy())


def test_large_weight_files_count_by_size_and_mtime(own_teacher, monkeypatch):
    """Weights over HASH_BYTES are not read: their size and mtime stand for them; small files count
    by content (a copy with new mtimes is the same teacher)."""
    monkeypatch.setattr(teacher_cache, "HASH_BYTES", 1024, raising=False)
    teacher = Teacher(own_teacher)
    key = cache_key(teacher, {"files": ["x"]}, 4)
    assert cache_key(teacher, {"files": ["x"]}, 4) == key
    weights = max((p for p in own_teacher.iterdir() if p.is_file()), key=lambda p: p.stat().st_size)
    assert weights.stat().st_size > 1024
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    touched = cache_key(teacher, {"files": ["x"]}, 4)
    assert touched != key
    config = own_teacher / "config.json"
    before = config.stat()
    config.write_text(config.read_text().replace("\n", " ", 1))  # same size, same mtime, other contents
    os.utime(config, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert config.stat().st_size == before.st_size
    assert cache_key(teacher, {"files": ["x"]}, 4) != touched  # a small file counts by its contents


def _interrupted_build(teacher, corpus, root, monkeypatch, inject):
    """A build stopped (ENOSPC) after its fifth batch, with progress records every two batches."""
    monkeypatch.setattr(teacher_cache, "BATCH_TOKENS", 200)
    monkeypatch.setattr(teacher_cache, "PROGRESS_EVERY", 2)
    inject("teacher_cache.batch:5:enospc")
    with pytest.raises(OSError):
        build_cache(teacher, corpus.segments, corpus.info, root, dim=4, progress=False)
    inject("")
    [partial] = root.glob(".*.partial")
    return partial


def _same_cache(clean, built):
    for name in ("keys.npy", "starts.npy"):
        assert numpy.array_equal(numpy.load(clean.directory / name), numpy.load(built.directory / name))
    rows = clean.meta["rows"]
    assert numpy.array_equal(clean.vectors[:rows], built.vectors[:rows], equal_nan=True)


@pytest.mark.parametrize("torn", ["", '{"segments": 4', "[]"])
def test_an_unreadable_progress_record_starts_the_build_again(teacher_dir, corpus, tmp_path, monkeypatch, inject,
                                                              torn, capsys):
    teacher = Teacher(teacher_dir)
    monkeypatch.setattr(teacher_cache, "BATCH_TOKENS", 200)
    clean = build_cache(teacher, corpus.segments, corpus.info, tmp_path / "clean", dim=4, progress=False)
    partial = _interrupted_build(teacher, corpus, tmp_path / "cache", monkeypatch, inject)
    (partial / "progress.json").write_text(torn)  # what a kill in the middle of a plain write leaves
    built = build_cache(teacher, corpus.segments, corpus.info, tmp_path / "cache", dim=4, progress=False)
    assert not any((tmp_path / "cache").glob(".*.partial"))
    _same_cache(clean, built)
    assert "progress.json" in capsys.readouterr().err  # it says why it started again


def test_a_write_torn_mid_record_leaves_the_previous_record(teacher_dir, corpus, tmp_path, monkeypatch):
    """A record whose write fails half-way (a kill, a full disk) never replaces the last whole one."""
    teacher = Teacher(teacher_dir)
    monkeypatch.setattr(teacher_cache, "BATCH_TOKENS", 200)
    monkeypatch.setattr(teacher_cache, "PROGRESS_EVERY", 2)
    clean = build_cache(teacher, corpus.segments, corpus.info, tmp_path / "clean", dim=4, progress=False)
    writes = []
    write_text = Path.write_text

    def torn_second_record(self, data, *args, **kwargs):
        if "progress" in self.name:
            writes.append(data)
            if len(writes) == 2:  # half of the second record reaches the disk, then the process dies
                write_text(self, data[: len(data) // 2], *args, **kwargs)
                raise OSError(errno.ENOSPC, "No space left on device")
        return write_text(self, data, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", torn_second_record)
    with pytest.raises(OSError):
        build_cache(teacher, corpus.segments, corpus.info, tmp_path / "cache", dim=4, progress=False)
    monkeypatch.setattr(Path, "write_text", write_text)
    [partial] = (tmp_path / "cache").glob(".*.partial")
    assert (partial / "progress.json").read_text() == writes[0]  # the first record, whole
    built = build_cache(teacher, corpus.segments, corpus.info, tmp_path / "cache", dim=4, progress=False)
    _same_cache(clean, built)
