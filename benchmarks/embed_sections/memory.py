"""`memory`: peak resident memory of `embed` over all of EWT train, sampled as the input is consumed."""
import sys
import tempfile
from pathlib import Path

from common import ROOT, ewt_sentences, run_child, table, write_sentences

CHILD = Path(__file__).resolve().parent / "memory_child.py"


def run(args) -> str:
    sentences = ewt_sentences(0)
    n_tokens = sum(map(len, sentences))
    with tempfile.TemporaryDirectory() as tmp:
        text = write_sentences(sentences, Path(tmp))
        result = run_child(ROOT, [sys.executable, str(CHILD), str(text), str(Path(tmp) / "o.hdf5"),
                                  "--threads", str(args.threads)])
        size = (Path(tmp) / "o.hdf5").stat().st_size
    samples = result["samples"]
    marks = []
    for fraction in (0.1, 0.25, 0.5, 0.75, 1.0):
        target = fraction * n_tokens
        tokens, rss = next(((t, r) for t, r in samples if t >= target), samples[-1])
        marks.append([f"{fraction:.0%}", f"{tokens:,}", f"{rss:,.0f}"])
    return (
        f"### Memory: `embed` over all of EWT train ({len(sentences):,} sentences, {n_tokens:,} tokens, "
        "small shapes)\n\n"
        f"Peak RSS of the embedding process as the input is consumed (output file {size / 2**20:,.0f} MiB, "
        f"{result['seconds']:.0f} s):\n\n" + table(marks, ["progress", "tokens done", "peak RSS (MiB)"]) + "\n"
    )
