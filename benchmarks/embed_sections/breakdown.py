"""`breakdown`: where `embed`'s time goes end to end (small shapes, token cache on, HDF5
written): every matrix product timed with its FLOPs, the cell kernel, the stages."""
import tempfile
import time
from pathlib import Path
from typing import Dict, List

from common import RateProbe, embed_file_speed, ewt_sentences, random_model, table, write_sentences

PRODUCT_NAMES = {
    (128, 4096): "LSTM layer 0: step products h W_hh (K=128)",
    (256, 4096): "LSTM layer 1: step products [x, h] W (K=256)",
    (1024, 128): "LSTM projections m W_proj, clipped",
    (2048, 4096): "highway",
    (2048, 128): "token projection",
    (7 * 16, 2048): "character CNN (all widths as one product)",  # max width x char dim, filters
}
TABLE = "LSTM layer 0: input products per distinct token (K=128)"


def run(args) -> str:
    from spacy_elmo.bilm.engine import cell_kernel, inference, loops, onednn_ops as onednn
    from spacy_elmo.bilm import model as model_module
    from spacy_elmo.embedding import dump

    names = dict(PRODUCT_NAMES)
    if not cell_kernel.available():  # without the kernel, layer 0 steps [x, h] W too: one K=256 row for both
        names[(256, 4096)] = "LSTM layers 0 and 1: step products [x, h] W (K=256; no cell kernel)"
    model = random_model("small")
    sentences = ewt_sentences(args.sentences)
    n_tokens = sum(map(len, sentences))
    spent: Dict[str, List[float]] = {}  # label -> [seconds, flops, calls]
    in_table = [False]
    originals = []

    def timed(owner, name, label_of):
        original = getattr(owner, name)
        originals.append((owner, name, original))

        def wrapper(*a, **k):
            start = time.perf_counter()
            out = original(*a, **k)
            label, flops = label_of(a, k, out)
            entry = spent.setdefault(label, [0.0, 0, 0])
            entry[0] += time.perf_counter() - start
            entry[1] += flops
            entry[2] += 1
            return out

        setattr(owner, name, wrapper)

    def product(a, k, out):
        x = a[0]
        shape = (x.shape[1], out.shape[1])
        name = TABLE if in_table[0] else names.get(shape, f"product K={shape[0]} N={shape[1]}")
        return name, 2 * x.shape[0] * x.shape[1] * out.shape[1]

    def table_products(a, k, out):
        return "= " + TABLE, 0

    real_table_products = loops.table_products

    def flag_table_products(*a, **k):
        in_table[0] = True
        try:
            return real_table_products(*a, **k)
        finally:
            in_table[0] = False

    loops.table_products = flag_table_products
    timed(onednn, "linear", product)
    timed(cell_kernel, "update", lambda a, k, out: ("LSTM cell kernel (sigmoids, cell, m)", 0))
    timed(loops, "run_layer", lambda a, k, out: ("= LSTM layers in all", 0))
    timed(model_module.BiLM, "encode_tokens", lambda a, k, out: ("= token encoder in all", 0))
    for module in (model_module, inference):  # each calls the copy it imported: the engines', inference's
        timed(module, "stack_layers", lambda a, k, out: ("output layers assembled", 0))
    timed(dump._DatasetWriter, "write", lambda a, k, out: ("HDF5 writes (one dataset per sentence)", 0))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            text = write_sentences(sentences, Path(tmp))
            embed_file_speed(model, text, n_tokens)  # warm-up: oneDNN's kernels, the kept weights
            spent.clear()
            probe = RateProbe()
            probe.sample()
            start = time.perf_counter()
            embed_file_speed(model, text, n_tokens)
            total = time.perf_counter() - start
            probe.sample()
    finally:
        loops.table_products = real_table_products
        for owner, name, original in originals:
            setattr(owner, name, original)
    rows = []
    for label, (seconds, flops, calls) in sorted(spent.items(), key=lambda kv: (kv[0].startswith("="), -kv[1][0])):
        rows.append([label, f"{calls:,}", f"{seconds:.2f}", f"{seconds / total:.1%}",
                     f"{flops / seconds / 1e9:.0f}" if flops else ""])
    accounted = sum(v[0] for k, v in spent.items() if not k.startswith("="))
    rows.append(["rest (token ids, cache, gathers, Python)", "", f"{total - accounted:.2f}",
                 f"{(total - accounted) / total:.1%}", ""])
    products = sum(v[0] for v in spent.values() if v[1])
    return (
        f"### Where `embed`'s time goes: small shapes, {len(sentences):,} sentences ({n_tokens:,} tokens), "
        "token cache on, HDF5 written\n\n"
        f"{n_tokens / total:,.0f} tokens/s in this instrumented run ({total:.1f} s); matmul rate around it "
        f"{probe.mean() / 1e9:.0f} GFLOP/s. Rows marked = contain the ones above them.\n\n"
        + table(rows, ["what", "calls", "seconds", "share", "GFLOP/s"])
        + f"\n\nMatrix products: {products / total:.0%} of the time.\n"
    )
