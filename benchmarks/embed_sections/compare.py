"""`compare`: `embed` speed and peak memory of this checkout against a baseline revision, in one run.

Child processes alternate between this checkout and a git worktree of the
baseline (default: the commit this branch left main from), each a fresh
process embedding the same EWT sentences with the small shapes (or, with
`--compare-model embedded`, the package's own biLM), token cache
on, HDF5 written (`memory_child.py`), on the model's backend or
`--compare-backend`'s, so that both see the same machine state within
seconds of each other. Reports tokens/s and peak RSS per round, the medians
and their ratios.
"""
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List

from common import ROOT, baseline_tree, ewt_sentences, merge_base, remove_tree, run_child, table, write_sentences

CHILD = Path(__file__).resolve().parent / "memory_child.py"
MODELS = {"small": "small shapes (random weights)", "embedded": "the embedded English biLM"}


def run(args) -> str:
    revision = args.baseline or merge_base()
    sentences = ewt_sentences(args.compare_sentences)
    n_tokens = sum(map(len, sentences))
    results: Dict[str, List[Dict[str, Any]]] = {"baseline": [], "this code": []}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        text = write_sentences(sentences, work)
        baseline = baseline_tree(revision, work)
        try:
            for r in range(args.rounds):
                pair = [("baseline", baseline), ("this code", ROOT)]
                for name, tree in pair if r % 2 == 0 else pair[::-1]:
                    out = work / f"out-{name.replace(' ', '-')}.hdf5"
                    command = [sys.executable, str(CHILD), str(text), str(out), "--threads", str(args.threads),
                               "--model", args.compare_model]
                    if args.compare_backend:
                        command += ["--backend", args.compare_backend]
                    results[name].append(run_child(tree, command))
                old, new = results["baseline"][-1], results["this code"][-1]
                rows.append([str(r + 1), f"{old['tokens_per_s']:,.0f}", f"{new['tokens_per_s']:,.0f}",
                             f"{new['tokens_per_s'] / old['tokens_per_s']:.3f}", f"{old['peak_mib']:,.0f}",
                             f"{new['peak_mib']:,.0f}"])
        finally:
            remove_tree(baseline)

    def median(name, key):
        return statistics.median(result[key] for result in results[name])

    speed_old, speed_new = median("baseline", "tokens_per_s"), median("this code", "tokens_per_s")
    mem_old, mem_new = median("baseline", "peak_mib"), median("this code", "peak_mib")
    rows.append(["median", f"{speed_old:,.0f}", f"{speed_new:,.0f}", f"**{speed_new / speed_old:.3f}**",
                 f"{mem_old:,.0f}", f"{mem_new:,.0f} (**{mem_new / mem_old:.3f}x**)"])
    header = ["round", f"baseline {revision} tokens/s", "this code tokens/s", "speed ratio",
              "baseline peak RSS (MiB)", "this code peak RSS (MiB)"]
    return (
        f"### `embed`, this code against {revision}: {MODELS.get(args.compare_model, args.compare_model)}"
        + (f" on the `{args.compare_backend}` backend" if args.compare_backend else "") + ", "
        f"{len(sentences):,} EWT sentences "
        f"({n_tokens:,} tokens), token cache on, HDF5 written, {args.rounds} alternating rounds\n\n"
        + table(rows, header) + "\n"
    )
