#!/usr/bin/env bash
# Every benchmark in one go, each printing its table; run it on an idle machine.
#
#     bash benchmarks/run_all.sh [OUTPUT_DIR]      # default: benchmarks/latest (not committed)
#
# The figures in benchmarks/RESULTS.md and RELIABILITY.md come from this script.
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
