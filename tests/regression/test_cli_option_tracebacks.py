"""Regression: option values the commands could not use ended in a traceback where docs/cli.md
promises one clear message and status 1: `embed --cache -1` (ValueError: max_size must be >= 0),
`embed --precision float8` (ValueError at the first batch), `perplexity --lang xx_nonexistent`
(ImportError E048, which `embed --lang` already reported cleanly)."""
from tests.cli.invoke import refused


def test_embed_negative_cache(allennlp_dir, tmp_path):
    text = tmp_path / "s.txt"
    text.write_text("hello world\n")
    refused(["embed", text, tmp_path / "v.hdf5", "--weights", allennlp_dir, "-q", "--cache", "-1"],
            "--cache must be 0 or more (0: off), got -1")


def test_embed_unknown_precision(allennlp_dir, tmp_path):
    text = tmp_path / "s.txt"
    text.write_text("hello world\n")
    refused(["embed", text, tmp_path / "v.hdf5", "--weights", allennlp_dir, "-q", "--precision", "float8"],
            "--precision must be one of float32, float16, bfloat16, got 'float8'")


def test_perplexity_unknown_language(tmp_path):
    text = tmp_path / "t.txt"
    text.write_text("the cat sat\n")
    refused(["perplexity", tmp_path / "any-model", text, "--lang", "xx_nonexistent"],
            "--lang xx_nonexistent: no such spaCy language", "E048")
