"""Soak test: a million tokens through nlp.pipe with the elmo component.

    python benchmarks/soak.py [--tokens 1000000] [--n-process 1] [--weights DIR] [--json OUT]

Docs of mixed lengths (1 to 30 EWT sentences each) stream through the
pipeline and are dropped. Every `--every` docs the resident memory of the
process (and its workers) is sampled, and a fixed probe doc goes through the
pipeline again; its layers must stay what they were the first time, within
--tolerance (float32 results depend at the 1e-7 level on batch shapes and on
whether a token vector came from the cache, never more). Prints the memory
curve, the growth after warm-up and the probe check; exits non-zero if memory
grows by more than --max-growth-mb after warm-up or the probe drifts.
"""
import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy
import psutil
import spacy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ewt_sentences, machine, table  # noqa: E402

PROBE = "The bank of the river was steep , but the bank in town was closed on Monday ."


def rss_mb() -> float:
    process = psutil.Process()
    total = process.memory_info().rss
    for child in process.children(recursive=True):
        try:
            total += child.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total / 2**20


def texts(target_tokens: int, seed: int = 0):
    sentences = [" ".join(s) for s in ewt_sentences(0)]
    rng = random.Random(seed)
    produced = 0
    while produced < target_tokens:
        doc = " ".join(rng.choice(sentences) for _ in range(rng.randint(1, 30)))
        produced += len(doc.split())
        yield doc


def soak(tokens: int, n_process: int, every: int, weights, warmup: float) -> dict:
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": weights} if weights else {})
    reference = nlp(PROBE)._.elmo.copy()
    samples, worst = [], 0.0
    processed = docs = 0
    start = time.perf_counter()

    def stream():
        for i, text in enumerate(texts(tokens)):
            yield text
            if i % every == every - 1:
                yield PROBE  # the probe also travels through the workers

    for doc in nlp.pipe(stream(), batch_size=64, n_process=n_process):
        if doc.text == PROBE:
            worst = max(worst, float(numpy.abs(doc._.elmo - reference).max()))
            samples.append((processed, rss_mb(), time.perf_counter() - start))
            continue
        processed += len(doc)
        docs += 1
    elapsed = time.perf_counter() - start
    if n_process == 1:
        worst = max(worst, float(numpy.abs(nlp(PROBE)._.elmo - reference).max()))
    after = [s for s in samples if s[0] >= warmup * processed] or samples
    growth = after[-1][1] - after[0][1] if after else 0.0
    return {"n_process": n_process, "tokens": processed, "docs": docs, "seconds": elapsed,
            "words_per_s": processed / elapsed, "samples": samples, "growth_after_warmup_mb": growth,
            "probe_max_abs_diff": worst}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=1_000_000)
    parser.add_argument("--n-process", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--every", type=int, default=200)
    parser.add_argument("--weights", default=None)
    parser.add_argument("--warmup", type=float, default=0.2, help="share of the run counted as warm-up")
    parser.add_argument("--max-growth-mb", type=float, default=50.0)
    parser.add_argument("--tolerance", type=float, default=1e-5)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    print(f"Machine: {machine()}\nCommand: python {' '.join(sys.argv)}\n")
    results, ok = [], True
    for n in args.n_process:
        result = soak(args.tokens, n, args.every, args.weights, args.warmup)
        results.append(result)
        picks = result["samples"][:: max(1, len(result["samples"]) // 10)] + result["samples"][-1:]
        rows = [[f"{t:,}", f"{r:,.0f}", f"{s:,.0f}"] for t, r, s in picks]
        print(f"### n_process={n}: {result['tokens']:,} tokens in {result['docs']:,} docs, "
              f"{result['words_per_s']:,.0f} words/s\n")
        print(table(rows, ["tokens processed", "RSS (MiB, with workers)", "seconds"]))
        print(f"\nRSS growth after warm-up: {result['growth_after_warmup_mb']:+.1f} MiB; "
              f"probe max |difference|: {result['probe_max_abs_diff']:.1e}\n")
        ok &= result["growth_after_warmup_mb"] <= args.max_growth_mb and result["probe_max_abs_diff"] <= args.tolerance
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
