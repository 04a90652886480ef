"""Inference speed and memory of the biLM, against a reference-style implementation and a baseline revision.

    python benchmarks/bench_embed.py                      # every section but compare
    python benchmarks/bench_embed.py --sections small,memory
    python benchmarks/bench_embed.py --sections compare [--baseline REV] [--rounds 3] [--compare-backend int8]
    python benchmarks/bench_embed.py --sections ray [--smoke]

Sections (one module each in benchmarks/embed_sections/):
  small     published "small" shapes on the first 6,000 EWT train sentences:
            the reference-style forward pass, ours without token cache, and
            the end-to-end `embed` path (token cache on, HDF5 written), run
            --e2e-runs times, each between two samples of the matmul rate and
            with the rate sampled after every batch (that time left out)
  original  published "original" shapes (LSTM 4096/512, 2 highways)
  memory    peak RSS embedding all of EWT train with `embed`, sampled along the way
  profile   where the time goes, per stage (small shapes, no cache, torch's profiler)
  breakdown where `embed`'s time goes end to end: every matrix product timed
            with its FLOPs, the cell kernel, the encoder, the HDF5 writes
  ab        `embed` on each backend, and with the inference weights rebuilt
            per batch or every boundary step run, alternating in one process
  compare   `embed` speed and peak memory, this checkout against --baseline
            (default: `git merge-base HEAD main`), in alternating child processes
  gpu       float32 and bfloat16 on CUDA, original shapes (skipped without CUDA)
  ray       `embed` local vs `--engine ray` with 1 and 2 workers: tokens/s, ratios,
            Ray's start-up cost, peak memory per worker (not in the default list:
            needs spacy-elmo[ray]; --smoke checks it runs on a tiny input)

Random weights of the published shapes; no weight files needed. Each section
measures the machine's fp32 matmul rate in the same run and reports the
useful work (FLOPs per token counted as the reference does it, see
common.forward_flops_per_token) as a fraction of it. Like the `spacy-elmo`
commands, it asks PyTorch for huge pages behind large tensors
(THP_MEM_ALLOC_ENABLE=1 unless set; set it to 0 to measure without). Run it
on an idle machine: nothing else may share the cores.
"""
import argparse
import importlib
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import COUNT, EWT_TRAIN, POSITIVE, command_line, machine, peak_rss_mb  # noqa: E402

from spacy_elmo.cli._util import huge_pages, prefer_huge_pages  # noqa: E402

SECTIONS = {"small": "small", "original": "original", "memory": "memory", "profile": "profiling",
            "breakdown": "breakdown", "ab": "ab", "compare": "compare", "gpu": "gpu", "ray": "ray_engine"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sections", default="small,original,memory,profile,breakdown,ab,gpu")
    parser.add_argument("--ab-runs", type=POSITIVE, default=3, help="runs per setting in the ab section")
    parser.add_argument("--e2e-runs", type=POSITIVE, default=3, help="`embed` runs in the small section")
    parser.add_argument("--sentences", type=COUNT, default=6000, help="EWT train sentences (0: all)")
    parser.add_argument("--reference-sentences", type=POSITIVE, default=640,
                        help="small: sentences the reference-style forward pass (and ours, for the ratio) runs on")
    parser.add_argument("--original-sentences", type=COUNT, default=500, help="original: EWT train sentences (0: all)")
    parser.add_argument("--compare-sentences", type=COUNT, default=6000, help="EWT sentences per compare run (0: all)")
    parser.add_argument("--baseline", default=None, help="compare: git revision (default: merge-base with main)")
    parser.add_argument("--compare-model", default="small",
                        help="compare: small (random weights, published small shapes) or embedded (the package's biLM)")
    parser.add_argument("--rounds", type=POSITIVE, default=3, help="compare: alternating rounds")
    parser.add_argument("--compare-backend", default=None,
                        help="compare: the biLM's backend in both trees (e.g. int8; default: the model's own)")
    parser.add_argument("--gpu-batch-tokens", type=POSITIVE, default=32768)
    parser.add_argument("--threads", type=COUNT, default=os.environ.get("BENCH_THREADS", "0"),
                        help="torch threads (0: torch's default; default: $BENCH_THREADS or 0)")
    parser.add_argument("--smoke", action="store_true", help="ray: a tiny biLM and input (checks that it runs)")
    args = parser.parse_args()
    unknown = [name for name in args.sections.split(",") if name not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {unknown}; choose from {sorted(SECTIONS)}")
    if args.threads:
        torch.set_num_threads(args.threads)
    # as the `spacy-elmo` commands do (before the first large tensor; child processes
    # inherit it): huge pages behind large CPU tensors
    prefer_huge_pages()
    print(f"Machine: {machine()}\n{command_line()}\nData: {EWT_TRAIN}\n"
          f"Huge pages for large tensors: {huge_pages()}\n")
    for name in args.sections.split(","):
        section = importlib.import_module(f"embed_sections.{SECTIONS[name]}")
        print(section.run(args), flush=True)
    print(f"Peak RSS of this benchmark process: {peak_rss_mb():,.0f} MiB")


if __name__ == "__main__":
    main()
