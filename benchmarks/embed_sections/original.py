"""`original`: the published original shapes (LSTM 4096, projection 512, 2 highways)."""
from common import distinct, matmul_rate, table, timed, workload
from reference_impl import ReferenceStyleELMo


def run(args) -> str:
    model, sentences, n_tokens, flops = workload("original", args.original_sentences)
    rate = matmul_rate()
    model.embed(sentences[:20])
    _, t = timed(lambda: model.embed(sentences))
    ours = n_tokens / t
    reference = ReferenceStyleELMo(model)
    ref_sents = distinct(sentences)[: max(64, args.original_sentences // 5)]  # ours is timed on these too
    ref_tokens = sum(map(len, ref_sents))
    _, rt = timed(lambda: [reference.embed(ref_sents[i : i + 64]) for i in range(0, len(ref_sents), 64)])
    ref = ref_tokens / rt
    _, t_same = timed(lambda: model.embed(ref_sents))
    ours_same = ref_tokens / t_same

    def row(name, tokens, speed, ratio=""):
        return [name, f"{tokens:,}", f"{speed:,.0f}", f"{speed * flops / 1e9:.1f}", f"{speed * flops / rate:.1%}",
                ratio]

    rows = [row("reference-style (batches of 64)", ref_tokens, ref, "1.0x"),
            row("ours, no token cache, the same sentences", ref_tokens, ours_same, f"{ours_same / ref:.1f}x"),
            row("ours, no token cache, all sentences", n_tokens, ours)]
    return (
        "### Published original shapes (LSTM 4096, projection 512, 2 highways)\n\n"
        f"Matmul rate in this run: {rate / 1e9:.1f} GFLOP/s; useful work {flops / 1e6:.1f} MFLOP/token.\n\n"
        + table(rows, ["variant", "tokens", "tokens/s", "useful GFLOP/s", "of matmul rate", "vs reference"])
        + "\n"
    )
