"""Regression: `embed --join -1` printed "Joined -1 shards" and wrote an empty file marked complete;
`--batch-size 0` and `--batch-tokens 0` were not refused either. Numbers out of their range are now
one message and status 1, before anything is written. `perplexity --max-length 0` means no limit
(documented); a negative one is an error."""
import pytest

from tests.cli.invoke import refused


def test_join_needs_at_least_one_shard(tmp_path):
    out = tmp_path / "v.hdf5"
    refused(["embed", tmp_path / "s.txt", out, "--join", "-1"], "--join N", "1 or more", "got -1")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("option,value,expected", [
    ("--batch-size", "0", "--batch-size must be 1 or more, got 0"),
    ("--batch-tokens", "0", "--batch-tokens must be 1 or more, got 0"),
    ("--chunk-lines", "0", "--chunk-lines must be 1 or more, got 0"),
    ("--workers", "0", "--workers must be 1 or more, got 0"),
])
def test_embed_numbers_out_of_range(allennlp_dir, tmp_path, option, value, expected):
    text = tmp_path / "s.txt"
    text.write_text("hello world\n")
    refused(["embed", text, tmp_path / "v.hdf5", "--weights", allennlp_dir, "-q", option, value], expected)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.txt"]


@pytest.mark.parametrize("option,value,expected", [
    ("--max-length", "-1", "--max-length must be 0 or more (0: no limit), got -1"),
    ("--batch-tokens", "0", "--batch-tokens must be 1 or more, got 0"),
])
def test_perplexity_numbers_out_of_range(tmp_path, option, value, expected):
    text = tmp_path / "t.txt"
    text.write_text("the cat sat\n")
    refused(["perplexity", tmp_path / "any-model", text, "--tokenizer", "whitespace", option, value], expected)
