"""Pretraining text: spaCy's tokenizer or pre-tokenized text, DocBin and gzip corpora, the cache key, and spaCy only
where the data needs it."""
import gzip
import hashlib
import subprocess
import sys
import textwrap

import pytest

from spacy_elmo.pretrain import SettingsError, load_config, pretrain
from spacy_elmo.pretrain.text_corpus import (
    _CACHE_VERSION,
    TokenizedCorpus,
    _cache_key,
    pretokenize,
    text_segments,
    tokenize_lines,
)

from .runs import _config

# whitespace of every kind, affixes, exceptions, URLs, emoji: what spaCy's tokenizer splits apart
AWKWARD_LINES = [
    "Don't   stop\tthe U.K.'s (very) \"odd\" co-op at 3:30pm -- e.g. https://example.com/a?b=c.",
    "no\u00a0break\u2009thin\u3000ideographic\u200bzero-width , spaces ;)",
    "  leading and trailing  \t ",
    "emoji 👍🏽 and ¿qué? «quotes» … ellipsis",
]


@pytest.fixture
def raw_text(small_corpus, tmp_path):
    path = tmp_path / "raw.txt"
    path.write_text(small_corpus.read_text(encoding="utf-8") + "\n".join(AWKWARD_LINES) + "\n\n", encoding="utf-8")
    return path


def test_pretokenized_text_reads_as_the_spacy_tokens_of_the_raw_text(raw_text, tmp_path):
    tokenized = tmp_path / "tokenized.txt.gz"
    lines = pretokenize(raw_text, tokenized)
    assert lines == sum(1 for line in raw_text.read_text(encoding="utf-8").splitlines() if line.strip())
    spacy_corpus = TokenizedCorpus.prepare(raw_text, tmp_path / "cache", max_length=16, progress=False)
    whitespace_corpus = TokenizedCorpus.prepare(
        tokenized, tmp_path / "cache", max_length=16, progress=False, tokenizer="whitespace"
    )
    assert list(whitespace_corpus.segments()) == list(spacy_corpus.segments())
    assert whitespace_corpus.counts() == spacy_corpus.counts()
    assert whitespace_corpus.info["tokenizer"] == "whitespace" and spacy_corpus.info["tokenizer"] == "spacy"
    assert text_segments(tokenized, "en", 16, "whitespace") == text_segments(raw_text, "en", 16)


def test_whitespace_tokenizer_splits_at_any_whitespace():
    assert list(tokenize_lines(["a  b\tc\u00a0d", ""], "whitespace")) == [["a", "b", "c", "d"], []]
    with pytest.raises(ValueError, match="choose one of"):
        list(tokenize_lines(["a"], "bpe"))


def test_spacy_tokenizer_keeps_the_cache_key_it_always_had(raw_text, tmp_path):
    digest = hashlib.sha1()
    stat = raw_text.stat()
    digest.update(f"{raw_text.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    digest.update(f"en|64|0|{_CACHE_VERSION}".encode())
    assert _cache_key([raw_text], "en", 64, 0) == digest.hexdigest()[:16]
    assert _cache_key([raw_text], "en", 64, 0, tokenizer="spacy") == digest.hexdigest()[:16]
    assert _cache_key([raw_text], "en", 64, 0, tokenizer="whitespace") != digest.hexdigest()[:16]


def test_tokenizer_setting_is_checked():
    assert load_config()["corpus"]["tokenizer"] == "spacy"
    assert load_config(overrides={"corpus.tokenizer": "whitespace"})["corpus"]["tokenizer"] == "whitespace"
    with pytest.raises(SettingsError, match=r"\[corpus\] tokenizer = 'bpe'; choose one of \('spacy', 'whitespace'\)"):
        load_config(overrides={"corpus.tokenizer": "bpe"})


def test_without_spacy_pretokenized_text_is_read_and_spacy_data_says_what_to_install(
    small_corpus, tmp_path, without_spacy_env
):
    import spacy
    from spacy.tokens import DocBin

    nlp = spacy.blank("en")
    DocBin(docs=[nlp("A sentence here.")]).to_disk(tmp_path / "c.spacy")
    with gzip.open(tmp_path / "tokenized.txt.gz", "wt", encoding="utf-8") as f:
        f.write("a pre-tokenized line .\nand another one\n")
    probe = textwrap.dedent(f"""
        import sys
        from spacy_elmo.pretrain.text_corpus import SpacyRequired, TokenizedCorpus
        corpus = TokenizedCorpus.prepare({str(tmp_path / "tokenized.txt.gz")!r}, {str(tmp_path / "cache")!r},
                                         progress=False, tokenizer="whitespace")
        print(list(corpus.segments()))
        for path in ({str(small_corpus)!r}, {str(tmp_path / "c.spacy")!r}):
            try:
                TokenizedCorpus.prepare(path, {str(tmp_path / "cache")!r}, progress=False)
            except SpacyRequired as err:
                print("SpacyRequired:", err)
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("spacy", "thinc")))
    """)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=without_spacy_env)
    assert done.returncode == 0, done.stderr[-3000:]
    segments, plain_text, docbin, imported = done.stdout.strip().splitlines()
    assert segments == str([["a", "pre-tokenized", "line", "."], ["and", "another", "one"]])
    assert 'tokenizer = "spacy"' in plain_text and "pip install spacy" in plain_text
    assert "c.spacy" in docbin and "pip install spacy" in docbin
    assert imported == "[]"


def test_training_on_pretokenized_text_gives_the_same_weights(tiny_config_path, raw_text, tmp_path):
    import torch

    from spacy_elmo.pretrain import pretrain

    pretokenize(raw_text, tmp_path / "tokenized.txt")
    runs = {}
    for tokenizer, train in (("spacy", raw_text), ("whitespace", tmp_path / "tokenized.txt")):
        overrides = {"paths.train": str(train), "corpus.tokenizer": tokenizer, "training.max_steps": 3,
                     "training.threads": 1, "model.dropout": 0.1}
        pretrain(load_config(tiny_config_path, overrides), tmp_path / tokenizer, progress=False)
        runs[tokenizer] = torch.load(tmp_path / tokenizer / "checkpoint.pt", weights_only=True)["model"]
    assert runs["spacy"].keys() == runs["whitespace"].keys()
    for name, tensor in runs["spacy"].items():
        assert torch.equal(runs["whitespace"][name], tensor), name


def test_docbin_and_gzip_corpora(tiny_config_path, small_corpus, tmp_path):
    import gzip

    import spacy
    from spacy.tokens import DocBin

    nlp = spacy.blank("en")
    docs = [nlp(line) for line in small_corpus.read_text().splitlines()[:30] if line.strip()]
    DocBin(docs=docs).to_disk(tmp_path / "c.spacy")
    with gzip.open(tmp_path / "c.txt.gz", "wt") as f:
        f.write(small_corpus.read_text())
    for train in ("c.spacy", "c.txt.gz"):
        config = _config(tiny_config_path, paths__train=str(tmp_path / train), training__max_steps=2)
        result = pretrain(config, tmp_path / f"run-{train}", progress=False)
        assert result["step"] == 2


def test_a_glob_pattern_is_a_string_with_a_wildcard_naming_no_path(tmp_path):
    """One test for both readers of [paths] train (the corpus and the trainer's output check): a file
    whose name holds a bracket is that file, and a Path is never a pattern."""
    from spacy_elmo.pretrain.text_corpus import expand_paths, is_glob_pattern

    bracketed = tmp_path / "news[1].txt"
    bracketed.write_text("a line\n", encoding="utf-8")
    assert not is_glob_pattern(str(bracketed)) and expand_paths(str(bracketed)) == [bracketed]
    assert is_glob_pattern(str(tmp_path / "*.txt")) and expand_paths(str(tmp_path / "*.txt")) == [bracketed]
    assert not is_glob_pattern(tmp_path / "*.txt") and not is_glob_pattern(str(tmp_path / "plain.txt"))
