"""benchmarks/RESULTS.md once held sections 2 and its issue-21 subsections twice: a scripted
edit spliced the text at the first "## 2." heading instead of the one after the edited
paragraph. Every heading of the results file names one section, so none may repeat."""
from collections import Counter
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "RESULTS.md"


def test_every_results_heading_appears_once():
    headings = [line.strip() for line in RESULTS.read_text(encoding="utf-8").splitlines()
                if line.startswith(("## ", "### "))]
    assert len(headings) > 10
    repeated = [h for h, n in Counter(headings).items() if n > 1]
    assert not repeated, f"headings repeated in RESULTS.md: {repeated}"
