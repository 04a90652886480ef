"""Memory of fine-tuning the biLM: thinc's PyTorch shim update against ElmoShim's in-place one.

    python benchmarks/bench_finetune_memory.py PIPELINE TRAIN.spacy [--steps 600] [--every 100] [--words 1000]

PIPELINE is a trained ELMo pipeline (e.g. training/ewt_elmo_adapt_s0/model-best);
its `elmo` component is unfrozen and the pipeline updated on batches of about
WORDS words of TRAIN, in order, with Adam from the pipeline's config: a
warm-up update (step 0, the first sample) and then STEPS updates. Each
variant runs in its own process, one after the other (their resident memory
must not mix): `thinc`, the parameter update of thinc's PyTorchShim, which
assigns each parameter a tensor made from the numpy view of the previous one;
`in place`, ElmoShim's. Every EVERY steps it prints the process's resident
set (VmRSS) and the torch tensors alive (gc). Numbers vary with the allocator
and the machine; the ratio of the growth is what to compare.
"""
import argparse
import gc
import itertools
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import POSITIVE, command_line, machine  # noqa: E402

VARIANTS = ("thinc", "in place")


def resident_gb() -> float:
    with open("/proc/self/status", encoding="utf-8") as f:
        return int(next(line for line in f if line.startswith("VmRSS:")).split()[1]) / 1e6


def run_variant(variant: str, pipeline: str, train: str, steps: int, every: int, words: int) -> List[Dict]:
    """In this process: a warm-up update (step 0) and `steps` more, sampling memory every `every` steps."""
    import spacy
    import torch
    from spacy.training import Corpus
    from thinc.api import PyTorchShim, fix_random_seed

    from spacy_elmo.layers.shim import ElmoShim

    if variant == "thinc":
        ElmoShim.finish_update = PyTorchShim.finish_update  # type: ignore[method-assign]
    fix_random_seed(0)
    nlp = spacy.load(pipeline)
    elmo = nlp.get_pipe("elmo")
    elmo.frozen = False  # type: ignore[attr-defined]
    batches, batch, size = [], [], 0
    for eg in Corpus(train)(nlp):
        batch.append(eg)
        size += len(eg.reference)
        if size >= words:
            batches.append(batch)
            batch, size = [], 0
    optimizer = nlp.create_optimizer()
    rows, start = [], time.perf_counter()
    for step, batch in enumerate(itertools.islice(itertools.cycle(batches), steps + 1)):
        nlp.update(batch, sgd=optimizer, drop=0.1)
        if step % every == 0:
            gc.collect()
            tensors = sum(1 for o in gc.get_objects() if isinstance(o, torch.Tensor))
            rows.append({"step": step, "rss_gb": round(resident_gb(), 3), "tensors": tensors,
                         "seconds": round(time.perf_counter() - start, 1)})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def check_inputs(pipeline: str, train: str) -> None:
    """One line, before any run, for a pipeline spaCy cannot load or a training file that is missing."""
    import spacy

    if not (Path(pipeline) / "config.cfg").is_file() and not spacy.util.is_package(pipeline):
        raise SystemExit(f"{pipeline}: not a pipeline directory (no config.cfg) nor an installed pipeline package")
    if not Path(train).exists():
        raise SystemExit(f"{train}: no such file (a .spacy DocBin of training docs)")


def run_child(variant: str, args: argparse.Namespace) -> List[Dict]:
    """The variant's rows, from a fresh process; a failed one is one line (its own error shows above)."""
    done = subprocess.run([sys.executable, __file__, args.pipeline, args.train, "--steps", str(args.steps),
                           "--every", str(args.every), "--words", str(args.words), "--variant", variant],
                          stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the {variant!r} run failed (exit {done.returncode}); its error is above")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipeline")
    parser.add_argument("train")
    parser.add_argument("--steps", type=POSITIVE, default=600, help="updates after the warm-up update (step 0)")
    parser.add_argument("--every", type=POSITIVE, default=100, help="steps between samples")
    parser.add_argument("--words", type=POSITIVE, default=1000, help="words per batch")
    parser.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)  # the child's job
    args = parser.parse_args()
    if args.variant:
        print(json.dumps(run_variant(args.variant, args.pipeline, args.train, args.steps, args.every, args.words)))
        return
    check_inputs(args.pipeline, args.train)
    print(f"Machine: {machine()}\n{command_line()}\n")
    results = {variant: run_child(variant, args) for variant in VARIANTS}
    print(f"Fine-tuning {Path(args.pipeline)}: a warm-up update (step 0) and {args.steps} updates of about "
          f"{args.words} words\n")
    print("| step | " + " | ".join(f"{v}: RSS GB | {v}: live tensors" for v in VARIANTS) + " |")
    print("|---|" + "---|---|" * len(VARIANTS))
    for rows in zip(*results.values()):
        print(f"| {rows[0]['step']} | " + " | ".join(f"{r['rss_gb']:.2f} | {r['tensors']:,}" for r in rows) + " |")
    growth = {v: rows[-1]["rss_gb"] - rows[1]["rss_gb"] for v, rows in results.items() if len(rows) > 1}
    if len(growth) == 2 and growth["in place"] > 0:
        print(f"\nRSS growth after step {results['thinc'][1]['step']}: thinc {growth['thinc']:.2f} GB, "
              f"in place {growth['in place']:.2f} GB ({growth['thinc'] / growth['in place']:.1f}x)")
    elif len(growth) == 2:
        print(f"\nRSS growth after step {results['thinc'][1]['step']}: thinc {growth['thinc']:.2f} GB, "
              f"in place {growth['in place']:.2f} GB")


if __name__ == "__main__":
    main()
