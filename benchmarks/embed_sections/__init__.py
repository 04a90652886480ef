"""The sections of benchmarks/bench_embed.py, one module each; see that script's docstring."""
