"""Regression: a damaged .gz corpus ended `pretrain` with "Aborted." or a traceback.

A .gz cut short raised EOFError from deep in the read, which the command line took for a
Ctrl-D and printed only "Aborted."; a file named .gz that is not gzip raised gzip's
BadGzipFile with a traceback. Reading now raises `CorpusError` (a ValueError, which the
command reports as one line) naming the file and what is wrong ("cut short", "not gzip").
"""
import gzip

import pytest

from spacy_elmo.pretrain.text_corpus import TokenizedCorpus, pretokenize, text_segments
from tests.cli.invoke import refused

TEXT = "".join(f"line {i} of a small corpus with some words\n" for i in range(400))


@pytest.fixture
def cut(tmp_path):
    whole = gzip.compress(TEXT.encode())
    path = tmp_path / "cut.txt.gz"
    path.write_bytes(whole[: len(whole) // 2])
    return path


@pytest.fixture
def not_gzip(tmp_path):
    path = tmp_path / "plain.txt.gz"
    path.write_text(TEXT)
    return path


def test_a_cut_short_gzip_is_a_corpus_error_naming_it(cut, tmp_path):
    with pytest.raises(ValueError, match="cut short") as caught:
        TokenizedCorpus.prepare(cut, tmp_path / "cache", tokenizer="whitespace", progress=False)
    assert str(cut) in str(caught.value) and type(caught.value).__name__ == "CorpusError"
    assert not list((tmp_path / "cache").rglob("info.json"))  # nothing that looks complete
    with pytest.raises(ValueError, match="cut short"):
        text_segments(cut, "en", 64, "whitespace")


def test_a_gz_that_is_not_gzip_is_a_corpus_error_naming_it(not_gzip, tmp_path):
    with pytest.raises(ValueError, match="not gzip") as caught:
        TokenizedCorpus.prepare(not_gzip, tmp_path / "cache", tokenizer="whitespace", progress=False)
    assert str(not_gzip) in str(caught.value)
    with pytest.raises(ValueError, match="not gzip"):
        pretokenize(not_gzip, tmp_path / "out.txt")
    assert not (tmp_path / "out.txt").exists()


def test_a_damaged_segment_cache_names_it_and_the_remedy(tmp_path):
    source = tmp_path / "text.txt"
    source.write_text(TEXT)
    corpus = TokenizedCorpus.prepare(source, tmp_path / "cache", tokenizer="whitespace", progress=False)
    data = corpus.cache_file.read_bytes()
    corpus.cache_file.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="cut short") as caught:
        list(corpus.segments())
    assert str(corpus.cache_file) in str(caught.value) and f"delete {corpus.cache_file.parent}" in str(caught.value)


@pytest.mark.parametrize("which,problem", [("cut", "cut short"), ("not_gzip", "not gzip")])
def test_pretrain_reports_a_damaged_gzip_in_one_line(which, problem, request, tmp_path):
    path = request.getfixturevalue(which)
    text = refused(["pretrain", tmp_path / "run", "--paths.train", path, "--corpus.tokenizer", "whitespace",
                    "--quiet"], problem)
    assert path.name in text.replace(" ", "") or str(path) in text
    assert "Aborted" not in text


def test_perplexity_reports_a_damaged_gzip_in_one_line(cut, tiny_config_path, small_corpus, tmp_path):
    from spacy_elmo.pretrain import pretrain
    from tests.pretrain.runs import _config

    pretrain(_config(tiny_config_path, paths__train=str(small_corpus), training__max_steps=1), tmp_path / "r",
             progress=False)
    refused(["perplexity", tmp_path / "r" / "model-last", cut, "--tokenizer", "whitespace"], "cut short")
