#!/usr/bin/env bash
# The speed and memory benchmarks in one go, each printing its table; run it on an idle machine.
#
#     bash benchmarks/run_all.sh [OUTPUT_DIR]      # default: benchmarks/latest (not committed)
#
# It runs bench_embed.py's default sections (small, original, memory, profile, breakdown, ab, gpu;
# not compare or ray), bench_pretrain.py, bench_pipeline.py, soak.py, check_huge_pages.py and
# bench_load.py. The other benchmarks (bench_embed.py --sections compare or ray, bench_strided.py,
# bench_tokenizer.py, bench_bilm.py, bench_int8.py, bench_distill.py, bench_finetune_memory.py) run
# by their own commands: each table in benchmarks/RESULTS.md and RELIABILITY.md names the one that
# made it.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-benchmarks/latest}"
mkdir -p "$out"
python benchmarks/bench_embed.py | tee "$out/embed.md"
python benchmarks/bench_pretrain.py | tee "$out/pretrain.md"
python benchmarks/bench_pipeline.py | tee "$out/pipeline.md"
python benchmarks/soak.py --json "$out/soak.json" | tee "$out/soak.md"
python benchmarks/check_huge_pages.py | tee "$out/huge_pages.md"
python benchmarks/bench_load.py | tee "$out/load.md"
