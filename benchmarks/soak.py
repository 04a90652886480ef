"""Soak test: a million tokens through nlp.pipe with the elmo component.

    python benchmarks/soak.py [--tokens 1000000] [--n-process 1 2] [--sentences 2000] [--weights DIR] [--json OUT]

Docs of mixed lengths (1 to 30 sentences each, drawn at random from the first
--sentences EWT train sentences) stream through the pipeline and are dropped.
Every `--every` docs the resident memory of the process and its workers is
sampled, and a fixed probe doc goes through the pipeline again; its layers
must stay what they were the first time, bit for bit by default (--tolerance
0: the LSTM's products are kept tall enough for MKL to compute each row the
same way in any batch, and the token cache keeps every token's and the
boundaries' vectors; see tests/regression/test_batch_invariance.py).

Why a bounded source: every process keeps caches that grow with the
vocabulary it has seen (the token-vector cache, bounded at 50,000 entries,
spaCy's StringStore, lexemes and tokenizer cache). Drawn from all of EWT
(`--sentences 0`, ~20k word types), those are still filling after a million
tokens, most of all with n_process=2, where each worker sees half the text,
and RSS rises with them. Drawn from 2,000 sentences, they are full within the
warm-up, so any growth after it is memory lost per doc processed: a leak.

Warm-up: the first --warmup share of the run per process, so 20% with one
process and 40% with two (capped at 50%): each worker sees 1/n of the stream,
so its caches and its largest batch so far take n times as many tokens of
the run to settle.

Growth after warm-up = highest RSS in the last quarter of the samples taken
after warm-up minus highest RSS in the first quarter: RSS moves by tens of
MiB from one sample to the next with the size of the batch in flight, so
single samples make a noisy endpoint. Exits non-zero if it exceeds
--max-growth-mb or the probe drifts, and in one line if the run checked
nothing: fewer than 2 samples after warm-up, or no probe doc back from the
workers (raise --tokens or lower --every).
"""
import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import List, Tuple

import numpy
import psutil
import spacy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    COUNT, EWT_TRAIN, POSITIVE, check_data, check_weights, command_line, ewt_sentences, machine, table,
)

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


def texts(target_tokens: int, seed: int = 0, n_sentences: int = 0):
    sentences = [" ".join(s) for s in ewt_sentences(n_sentences)]
    rng = random.Random(seed)
    produced = 0
    while produced < target_tokens:
        doc = " ".join(rng.choice(sentences) for _ in range(rng.randint(1, 30)))
        produced += len(doc.split())
        yield doc


def warmup_share(warmup: float, n_process: int) -> float:
    """Share of the run that is warm-up: `warmup` per process (each sees 1/n of the stream)."""
    return min(0.5, warmup * max(1, n_process))


class SoakError(ValueError):
    """A run that checked nothing (too few samples, no probe compared): one line, non-zero exit."""


TOO_SHORT = "raise --tokens or lower --every"


def growth_after_warmup(samples, warmup_tokens: float) -> float:
    """Highest RSS in the last quarter of the post-warm-up samples minus the highest in the first.
    SoakError with fewer than 2 samples after warm-up: there is no growth to measure."""
    after = [rss for tokens, rss, _ in samples if tokens >= warmup_tokens]
    if len(after) < 2:
        raise SoakError(f"{len(after)} memory sample(s) after warm-up, too few to measure growth: {TOO_SHORT}")
    if len(after) < 4:
        return after[-1] - after[0]
    quarter = len(after) // 4
    return max(after[-quarter:]) - max(after[:quarter])


def probe_difference(differences: List[float]) -> float:
    """The largest of the probe's differences from its first layers; SoakError if none was compared
    (with workers, no probe doc came back)."""
    if not differences:
        raise SoakError(f"probe not checked: no probe doc came back through the pipeline; {TOO_SHORT}")
    return max(differences)


def soak(tokens: int, n_process: int, every: int, weights, warmup: float, n_sentences: int = 0) -> dict:
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": weights} if weights else {})
    reference = nlp(PROBE)._.elmo.copy()
    samples: List[Tuple[int, float, float]] = []
    differences: List[float] = []
    processed = docs = 0
    start = time.perf_counter()

    def stream():
        for i, text in enumerate(texts(tokens, n_sentences=n_sentences)):
            yield text
            if i % every == every - 1:
                yield PROBE  # the probe also travels through the workers

    for doc in nlp.pipe(stream(), batch_size=64, n_process=n_process):
        if doc.text == PROBE:
            differences.append(float(numpy.abs(doc._.elmo - reference).max()))
            samples.append((processed, rss_mb(), time.perf_counter() - start))
            continue
        processed += len(doc)
        docs += 1
    elapsed = time.perf_counter() - start
    if n_process == 1:
        differences.append(float(numpy.abs(nlp(PROBE)._.elmo - reference).max()))
    worst = probe_difference(differences)
    growth = growth_after_warmup(samples, warmup_share(warmup, n_process) * processed)
    return {"n_process": n_process, "tokens": processed, "docs": docs, "seconds": elapsed,
            "sentences": n_sentences, "words_per_s": processed / elapsed, "samples": samples,
            "growth_after_warmup_mb": growth,
            "probe_max_abs_diff": worst, "probe_checks": len(differences)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=POSITIVE, default=1_000_000)
    parser.add_argument("--n-process", type=POSITIVE, nargs="+", default=[1, 2])
    parser.add_argument("--every", type=POSITIVE, default=200, help="docs between samples (and probe docs)")
    parser.add_argument("--weights", default=None, help="the elmo component's model (default: the embedded biLM)")
    parser.add_argument("--sentences", type=COUNT, default=2000,
                        help="draw docs from the first N EWT train sentences (0: all; see above)")
    parser.add_argument("--warmup", type=float, default=0.2,
                        help="share of the run counted as warm-up, per process (see above)")
    parser.add_argument("--max-growth-mb", type=float, default=50.0)
    parser.add_argument("--tolerance", type=float, default=0.0, help="largest allowed probe difference")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    check_weights(args.weights)
    check_data(EWT_TRAIN)
    print(f"Machine: {machine()}\n{command_line()}\n")
    results, ok = [], True
    for n in args.n_process:
        try:
            result = soak(args.tokens, n, args.every, args.weights, args.warmup, args.sentences)
        except SoakError as err:
            raise SystemExit(f"n_process={n}: {err}") from None
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
