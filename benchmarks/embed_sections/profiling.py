"""`profile`: where the time goes per stage (small shapes, no token cache), with torch's profiler."""
import time
from typing import Dict

from common import ewt_sentences, random_model, table


def run(args) -> str:
    from torch.profiler import ProfilerActivity, profile, record_function

    from spacy_elmo.bilm import token_encoder
    from spacy_elmo.bilm.engine import loops

    model = random_model("small")
    sentences = ewt_sentences(2000)
    model.embed(sentences[:100])
    totals: Dict[str, float] = {}
    originals = []

    def wrap(obj, name, label):
        fn = getattr(obj, name)
        originals.append((obj, name, fn))

        def timed(*a, **k):
            start = time.perf_counter()
            with record_function(label):
                out = fn(*a, **k)
            totals[label] = totals.get(label, 0.0) + time.perf_counter() - start
            return out

        setattr(obj, name, timed)

    wrap(token_encoder, "max_pooled_convolutions", "char CNN (conv + max-pool)")
    wrap(loops, "run_layer", "LSTM layers (both directions)")
    wrap(model, "encode_tokens", "token encoder total (CNN + highway + proj)")
    try:
        start = time.perf_counter()
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            model.embed(sentences)
        total = time.perf_counter() - start
    finally:
        for obj, name, fn in originals:
            setattr(obj, name, fn)
    encoder = totals.pop("token encoder total (CNN + highway + proj)")
    totals["highway + projection"] = encoder - totals["char CNN (conv + max-pool)"]
    totals["rest (ids, batching, gather, output)"] = total - sum(totals.values())
    rows = [[k, f"{v:.2f}", f"{v / total:.0%}"] for k, v in totals.items()]
    ops = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12)
    return (
        "### Profile: small shapes, 2,000 EWT sentences (profiler on, so slower than above)\n\n"
        + table(rows, ["stage", "seconds", "share"])
        + "\n\nTop operators:\n\n```\n" + ops + "\n```\n"
    )
