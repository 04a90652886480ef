"""Pretraining throughput of a config, and its share of the machine's matmul rate.

    python benchmarks/bench_pretrain.py [--config configs/pretrain_en_2x512_128.cfg] [--steps 20]

Trains on real text (the first segments of ../shared/data/pretrain_en/train.txt.gz)
with the config's batching, optimizer and softmax, times `--steps` optimizer
steps after 3 warm-up steps, and counts the useful work per training token as
3x the forward pass (the backward pass costs two forward passes): the
character CNN over all positions, highway, projection, LSTMs, and the softmax
over the sampled classes actually drawn (or the full vocabulary).
"""
import argparse
import itertools
import math
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA, ROOT, forward_flops_per_token, machine, matmul_rate, table  # noqa: E402

from spacy_elmo.bilm.vocab import Vocabulary  # noqa: E402
from spacy_elmo.pretrain import load_config  # noqa: E402
from spacy_elmo.pretrain.batching import sentence_batches  # noqa: E402
from spacy_elmo.pretrain.corpus import TokenizedCorpus  # noqa: E402
from spacy_elmo.pretrain.trainer import _optimizer, build_language_model  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(ROOT / "configs" / "pretrain_en_2x512_128.cfg"))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--segments", type=int, default=30000)
    args = parser.parse_args()
    config = load_config(args.config)
    torch.set_num_threads(config["training"]["threads"] or torch.get_num_threads())
    print(f"Machine: {machine()}\nCommand: python {' '.join(sys.argv)}\n")
    with tempfile.TemporaryDirectory() as tmp:
        corpus = TokenizedCorpus.prepare(DATA / "pretrain_en" / "train.txt.gz", tmp, max_length=config["corpus"]["max_length"],
                                         max_segments=args.segments, progress=False)
        vocab = Vocabulary.from_counts(corpus.counts(), config["vocab"]["max_size"])
        lm = build_language_model(config, vocab, 0)
        lm.train()
        optimizer = _optimizer(config, lm.parameters())
        generator = torch.Generator().manual_seed(0)
        batches = list(itertools.islice(sentence_batches(corpus.segments(), vocab, config["training"]["batch_tokens"], 0),
                                        args.steps + 3))
    def step(batch):
        optimizer.zero_grad(set_to_none=True)
        losses, counts, _ = lm(batch, generator=generator)
        loss = 0.5 * (losses / counts.clamp(min=1)).sum()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(lm.parameters(), config["training"]["grad_clip"])
        optimizer.step()
        return int(counts[0])

    for batch in batches[:3]:
        step(batch)
    rate = matmul_rate()
    tokens, start = 0, time.perf_counter()
    for batch in batches[3:]:
        tokens += step(batch)
    seconds = time.perf_counter() - start
    # the softmax classes a training token is scored against
    kind = config["softmax"]["kind"]
    if kind == "sampled" and config["softmax"]["n_samples"] < len(vocab):
        with torch.no_grad():
            log_range = math.log(len(vocab) + 1)
            draws = [((torch.exp(torch.rand(config["softmax"]["n_samples"], generator=torch.Generator().manual_seed(i))
                                 * log_range).floor().long() - 1).clamp(0, len(vocab) - 1).unique().numel()) for i in range(20)]
        classes = sum(draws) / len(draws) + 1
    else:
        classes = len(vocab)
    forward = forward_flops_per_token(lm.bilm.config)
    softmax = 2 * 2 * lm.bilm.config.projection_dim * classes  # both directions
    per_token = 3 * (forward["total"] + softmax)
    speed = tokens / seconds
    rows = [[f"{tokens:,}", f"{speed:,.0f}", f"{per_token / 1e6:.1f}", f"{speed * per_token / 1e9:.1f}",
             f"{rate / 1e9:.1f}", f"{speed * per_token / rate:.1%}"]]
    print(f"### Pretraining throughput: {Path(args.config).name}, {args.steps} steps of ~{config['training']['batch_tokens']} "
          f"padded tokens, {kind} softmax ({classes:,.0f} classes per token on average)\n")
    print(table(rows, ["tokens", "tokens/s", "MFLOP/token (train)", "useful GFLOP/s", "matmul GFLOP/s", "of matmul rate"]))
    print(f"\nForward MFLOP/token: char CNN {forward['char_cnn'] / 1e6:.1f}, highway {forward['highway'] / 1e6:.1f}, "
          f"projection {forward['projection'] / 1e6:.1f}, LSTMs {forward['lstm'] / 1e6:.1f}, softmax {softmax / 1e6:.1f}.")


if __name__ == "__main__":
    main()
