"""`small`: the published small shapes on EWT sentences: the reference-style loop, ours
without the token cache, and `embed` end to end against issue 6's goal."""
import statistics
import tempfile
from pathlib import Path

import numpy
from common import (
    RateProbe, distinct, embed_file_speed, matmul_rate, scaled_goal, table, timed, workload, write_sentences,
)
from reference_impl import ReferenceStyleELMo


def run(args) -> str:
    model, sentences, n_tokens, flops = workload("small", args.sentences)
    rate_before = matmul_rate()

    reference = ReferenceStyleELMo(model)
    ref_sents = distinct(sentences)[: args.reference_sentences]  # the ratio is ours on these, timed below
    ref_tokens = sum(map(len, ref_sents))
    ref_batches = [ref_sents[i : i + 64] for i in range(0, len(ref_sents), 64)]
    ref_out, ref_time = timed(lambda: [x for b in ref_batches for x in reference.embed(b)])
    ref_rate = ref_tokens / ref_time
    n_checked = min(64, len(ref_sents))
    ours_check = model.embed(ref_sents[:n_checked])
    diff = max(float(numpy.abs(a - b).max()) for a, b in zip(ours_check, ref_out[:n_checked]))

    model.disable_cache()
    model.embed(sentences[:200])  # warm-up
    _, t_same = timed(lambda: model.embed(ref_sents))
    ours_same = ref_tokens / t_same
    _, t = timed(lambda: model.embed(sentences))
    ours = n_tokens / t

    # `embed` several times. On a shared machine the matmul rate moves by tens of
    # percent from one second to the next, so each run is held to two rates: the
    # higher of two samples just before and after it, and the mean of samples taken
    # through it, after every batch (their time left out)
    e2e_runs = []
    with tempfile.TemporaryDirectory() as tmp:
        text = write_sentences(sentences, Path(tmp))
        for _ in range(args.e2e_runs):
            before = matmul_rate(seconds=1.0)
            probe = RateProbe()
            speed = embed_file_speed(model, text, n_tokens, probe)
            after = matmul_rate(seconds=1.0)
            e2e_runs.append((speed, max(before, after), probe))
    e2e = statistics.median(speed for speed, _, _ in e2e_runs)
    around = [speed / scaled_goal(r) for speed, r, _ in e2e_runs]
    through = [speed / scaled_goal(probe.mean()) for speed, _, probe in e2e_runs]
    rate_after = matmul_rate()
    rate = max([rate_before, rate_after] + [r for _, r, _ in e2e_runs])
    # "vs reference": like for like only, the same distinct sentences; the other rows read all of them
    variants = [("reference-style (batches of 64)", ref_tokens, ref_rate, "1.0x"),
                ("ours, no token cache, the same sentences", ref_tokens, ours_same, f"{ours_same / ref_rate:.1f}x"),
                ("ours, no token cache, all sentences", n_tokens, ours, ""),
                (f"ours, `embed` end to end (cache on, HDF5 written; median of {len(e2e_runs)})", n_tokens, e2e, "")]
    rows = [[name, f"{tokens:,}", f"{speed:,.0f}", f"{speed * flops / 1e9:.1f}", f"{speed * flops / rate:.1%}",
             ratio] for name, tokens, speed, ratio in variants]
    header = ["variant", "tokens", "tokens/s", "useful GFLOP/s", "of matmul rate", "vs reference"]
    goal_rows = [
        [f"{speed:,.0f}", f"{r / 1e9:.1f}", f"{a:.0%}", f"{probe.mean() / 1e9:.1f} ({len(probe.rates)} samples, "
         f"{min(probe.rates) / 1e9:.0f}-{max(probe.rates) / 1e9:.0f})", f"{b:.0%}"]
        for (speed, r, probe), a, b in zip(e2e_runs, around, through)
    ]
    goal_header = ["tokens/s", "higher rate before/after", "of its goal", "mean rate through the run (range)",
                   "of its goal"]
    around_runs = [r for _, r, _ in e2e_runs]
    return (
        f"### Published small shapes, {len(sentences):,} EWT train sentences ({n_tokens:,} tokens)\n\n"
        f"Matmul rate measured in this run: {rate_before / 1e9:.1f} GFLOP/s fp32 at the start, "
        f"{rate_after / 1e9:.1f} at the end, {min(around_runs) / 1e9:.1f}-{max(around_runs) / 1e9:.1f} around the "
        f"`embed` runs; the fractions use the highest, {rate / 1e9:.1f}. Useful work: {flops / 1e6:.1f} MFLOP/token. "
        f"Max |difference| ours vs reference-style on {n_checked} sentences: {diff:.1e}.\n\n"
        + table(rows, header)
        + "\n\nGoal for `embed`: 10,000 tokens/s at 180 GFLOP/s, scaled to the rate of each run, taken two ways:\n\n"
        + table(goal_rows, goal_header)
        + f"\n\n**Median reached: {statistics.median(around):.0%} (rate before/after), "
        f"{statistics.median(through):.0%} (rate through the run)**; end to end / no cache = {e2e / ours:.2f}.\n"
    )
