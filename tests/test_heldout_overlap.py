"""benchmarks/heldout_overlap.py: near-copies between held-out and training text, and what perplexity counts."""
import gzip
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import heldout_overlap  # noqa: E402


def _gz(path: Path, lines) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
    return path


def test_overlap_finds_equal_lines_and_shared_runs_of_words_through_case_and_punctuation(tmp_path):
    train = _gz(tmp_path / "train.txt.gz", [
        "The quick brown fox jumps over the lazy dog.",
        "One two three four five six seven eight nine ten eleven.",
    ])
    heldout = _gz(tmp_path / "heldout.txt.gz", [
        "the quick brown fox jumps over the lazy dog",   # equal once normalized
        "Zero one two three four five six seven eight nine ten!",  # shares 10 words with the second
        "Nothing here is in the training text at all, not even close to it.",
    ])
    found = heldout_overlap.overlap(train, heldout, n=10)
    assert found["lines"] == 3 and found["equal"] == 1 and found["sharing"] == 1
    assert found["covered"] == 10  # the first line has 9 words only: no 10-word run, though equal


def test_targets_count_segment_ends_and_unknown_words(tmp_path, tiny_config_path):
    train = _gz(tmp_path / "train.txt.gz", ["a b c a b a"] * 3)
    heldout = _gz(tmp_path / "heldout.txt.gz", ["a b z", "c y"])
    counted = heldout_overlap.targets(train, heldout, tiny_config_path, tmp_path / "cache")
    assert counted["tokens"] == 5 and counted["segments"] == 2 and counted["unknown"] == 2
