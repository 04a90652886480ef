"""`gpu`: float32 and bfloat16 on CUDA, original shapes (skipped without CUDA)."""
import torch
from common import matmul_rate, table, timed, workload


def run(args) -> str:
    if not torch.cuda.is_available():
        return "### GPU\n\nSkipped: CUDA is not available on this machine.\n"
    device = "cuda"
    model, sentences, n_tokens, flops = workload("original", args.sentences)
    model.to(device)
    rows = []
    for precision, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
        rate = matmul_rate(8192, dtype=dtype, device=device)
        model.embed(sentences[:500], batch_tokens=args.gpu_batch_tokens, precision=precision)
        torch.cuda.synchronize()
        _, t = timed(lambda: model.embed(sentences, batch_tokens=args.gpu_batch_tokens, precision=precision))
        speed = n_tokens / t
        rows.append([precision, f"{rate / 1e12:.1f}", f"{speed:,.0f}", f"{speed * flops / 1e12:.2f}",
                     f"{speed * flops / rate:.1%}"])
    return (f"### GPU: {torch.cuda.get_device_name()}, original shapes, {len(sentences):,} sentences "
            f"({n_tokens:,} tokens)\n\n"
            + table(rows, ["precision", "matmul TFLOP/s", "tokens/s", "useful TFLOP/s", "of matmul rate"]) + "\n")
