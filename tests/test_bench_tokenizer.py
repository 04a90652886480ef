"""benchmarks/bench_tokenizer.py on a slice of UD English-EWT: the learned tokenizer finds more gold tokens."""
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_tokenizer.py"


def test_the_table_compares_both_tokenizers(ewt_dir):
    done = subprocess.run([sys.executable, str(SCRIPT), "--limit", "3000", "--rounds", "1"],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "SPACY_ELMO_DATA": str(ewt_dir.parent)})
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in done.stdout.splitlines() if line.startswith("| ") and "%" in line}
    spacy_row, learned_row = rows["spaCy's English tokenizer"], rows["learned from EWT train"]
    learned_dev, spacy_dev = float(learned_row[0].rstrip("%")), float(spacy_row[0].rstrip("%"))
    assert learned_dev > spacy_dev  # dev: the learned tokenizer finds more gold tokens
    assert spacy_row[3] == "1.00" and float(learned_row[3]) > 0
