"""Pretraining throughput: this code against an earlier revision, measured in one run.

    python benchmarks/bench_pretrain.py [--sections speed,precision,batch] [--baseline REV]
        [--config configs/pretrain_en_2x512_128.cfg] [--threads N] [--steps 15] [--rounds 3]

`speed`: the training steps of the config (its batching, optimizer, softmax and
threads) on real text (the first segments of ../shared/data/pretrain_en), timed
after 3 warm-up steps, in child processes that alternate between this checkout
and a git worktree of the baseline revision (default: the last commit before
the training path was rewritten), so that both see the same machine state.
Prints tokens/s per round, the medians and their ratio, and the useful work as
a share of the machine's matmul rate (3x the forward FLOPs per token).

`precision`: float32 against bfloat16 autocast in one process: the matrix
product rate at the training shapes, and training steps from the same start
(tokens/s and the mean loss over the same batches).

`batch`: tokens/s at the config's batch size against twice it (this code).
"""
import argparse
import itertools
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))
from common import (  # noqa: E402
    command_line,
    COUNT,
    DATA,
    POSITIVE,
    ROOT,
    baseline_tree,
    check_data,
    forward_flops_per_token,
    machine,
    matmul_rate,
    one_line_errors,
    remove_tree,
    run_child,
    table,
)

# the code before the training path was rewritten (packed rows, compiled cell
# backward, one sampled softmax per batch)
BASELINE = "67ceedc"


def _training_setup(config_path: str, segments: int, cache: str, batch_tokens: int = 0, threads: int = 0):
    import torch

    from spacy_elmo.bilm.vocab import Vocabulary
    from spacy_elmo.pretrain import load_config
    from spacy_elmo.pretrain.batching import sentence_batches
    from spacy_elmo.pretrain.text_corpus import TokenizedCorpus
    try:
        from spacy_elmo.pretrain.building import build_language_model, build_optimizer
    except ImportError:  # a baseline revision from before pretrain/building.py
        # (_optimizer is gone from this checkout, which mypy checks against)
        from spacy_elmo.pretrain.trainer import _optimizer as build_optimizer  # type: ignore[attr-defined,no-redef]
        from spacy_elmo.pretrain.trainer import build_language_model

    overrides = {key: value for key, value in (("training.batch_tokens", batch_tokens), ("training.threads", threads))
                 if value} or None
    config = load_config(config_path, overrides)
    torch.set_num_threads(config["training"]["threads"] or torch.get_num_threads())
    corpus = TokenizedCorpus.prepare(DATA / "pretrain_en" / "train.txt.gz", cache,
                                     max_length=config["corpus"]["max_length"],
                                     max_segments=segments, progress=False)
    vocab = Vocabulary.from_counts(corpus.counts(), config["vocab"]["max_size"])
    lm = build_language_model(config, vocab, 0)
    lm.train()
    optimizer = build_optimizer(config, lm.parameters())
    batches = sentence_batches(corpus.segments(), vocab, config["training"]["batch_tokens"], 0)
    return config, lm, optimizer, batches


def _timed_steps(lm, optimizer, batches, steps: int, grad_clip: float, autocast=None):
    """(tokens/s, mean loss) over `steps` steps after 3 warm-up steps."""
    import contextlib

    import torch

    generator = torch.Generator().manual_seed(0)

    def step(batch):
        optimizer.zero_grad(set_to_none=True)
        with autocast or contextlib.nullcontext():
            losses, counts, _ = lm(batch, generator=generator)
            loss = 0.5 * (losses / counts.clamp(min=1)).sum()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(lm.parameters(), grad_clip)
        optimizer.step()
        return int(counts[0]), float(loss)

    batches = list(batches)
    for batch in batches[:3]:
        step(batch)
    tokens, loss_sum, start = 0, 0.0, time.perf_counter()
    for batch in batches[3:]:
        n, loss = step(batch)
        tokens += n
        loss_sum += loss
    return tokens / (time.perf_counter() - start), loss_sum / max(1, len(batches) - 3)


def child(args) -> None:
    """One timing in this process (run by `speed` and `batch` with the tree on PYTHONPATH)."""
    config, lm, optimizer, batches = _training_setup(args.config, args.segments, args.cache, args.batch_tokens,
                                                     args.threads)
    speed, loss = _timed_steps(lm, optimizer, itertools.islice(batches, args.steps + 3), args.steps,
                               config["training"]["grad_clip"])
    print(json.dumps({"tokens_per_s": speed, "loss": loss}))


def _batch_count(config_path: str, segments: int, cache: str, batch_tokens: int, wanted: int) -> int:
    """How many of `wanted` training batches of `batch_tokens` tokens the first `segments` segments make
    (tokenized into `cache`, which the runs of this code then read)."""
    from spacy_elmo.bilm.vocab import Vocabulary
    from spacy_elmo.pretrain import load_config
    from spacy_elmo.pretrain.batching import sentence_batches
    from spacy_elmo.pretrain.text_corpus import TokenizedCorpus

    config = load_config(config_path)
    corpus = TokenizedCorpus.prepare(DATA / "pretrain_en" / "train.txt.gz", cache,
                                     max_length=config["corpus"]["max_length"], max_segments=segments, progress=False)
    vocab = Vocabulary.from_counts(corpus.counts(), config["vocab"]["max_size"])
    return sum(1 for _ in itertools.islice(sentence_batches(corpus.segments(), vocab, batch_tokens, 0), wanted))


def check_segments(args, sections: List[str]) -> None:
    """Refuse, in one line and before the timed runs, a --segments too small for --steps: a run
    needs `steps` + 3 batches (3 warm-up), at the largest batch size the sections use."""
    from spacy_elmo.pretrain import load_config

    base = args.batch_tokens or load_config(args.config)["training"]["batch_tokens"]
    largest = 2 * base if "batch" in sections else base
    wanted = args.steps + 3
    got = _batch_count(args.config, args.segments, args.cache, largest, wanted)
    if got < wanted:
        raise SystemExit(f"--segments {args.segments} make {got} batches of {largest:,} tokens; {args.steps} steps "
                         f"need {wanted}: raise --segments")


def _run_child(tree: Path, args, cache: Path, batch_tokens: int = 0) -> dict:
    command = [sys.executable, str(HERE), "--child", "--config", args.config, "--steps", str(args.steps),
               "--segments", str(args.segments), "--cache", str(cache), "--batch-tokens", str(batch_tokens),
               "--threads", str(args.threads)]
    return run_child(tree, command)


def section_speed(args) -> None:
    import torch

    from spacy_elmo.bilm.vocab import Vocabulary
    from spacy_elmo.pretrain import load_config
    from spacy_elmo.pretrain.building import build_language_model

    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        baseline = baseline_tree(args.baseline, tmp)
        try:
            speeds: Dict[str, List[float]] = {"baseline": [], "this code": []}
            rows = []
            for r in range(args.rounds):
                pair = [("baseline", baseline), ("this code", ROOT)]
                for name, tree in pair if r % 2 == 0 else pair[::-1]:
                    # this code reads the corpus main() checked; the baseline tokenizes its own
                    got = _run_child(tree, args, Path(args.cache) if tree == ROOT else tmp / "cache-baseline")
                    speeds[name].append(got["tokens_per_s"])
                rows.append([str(r + 1), f"{speeds['baseline'][-1]:,.0f}", f"{speeds['this code'][-1]:,.0f}",
                             f"{speeds['this code'][-1] / speeds['baseline'][-1]:.2f}x"])
        finally:
            remove_tree(baseline)
    old, new = statistics.median(speeds["baseline"]), statistics.median(speeds["this code"])
    rows.append(["median", f"{old:,.0f}", f"{new:,.0f}", f"**{new / old:.2f}x**"])
    config = load_config(args.config)
    threads = args.threads or config["training"]["threads"] or torch.get_num_threads()
    torch.set_num_threads(threads)
    rate = matmul_rate()
    lm = build_language_model(config, Vocabulary.from_counts({}, 4), 0)
    per_token = 3 * (forward_flops_per_token(lm.bilm.config)["total"] + 2 * 2 * lm.bilm.config.projection_dim * 2000)
    print(f"### Pretraining speed: {Path(args.config).name} ({config['training']['batch_tokens']} tokens a batch, "
          f"{threads} threads), {args.steps} steps per run, baseline {args.baseline}\n")
    print(table(rows, ["round", f"baseline {args.baseline} tokens/s", "this code tokens/s", "ratio"]))
    print(f"\nUseful work at the median: {new * per_token / 1e9:.1f} GFLOP/s of a {rate / 1e9:.1f} GFLOP/s matmul rate "
          f"({new * per_token / rate:.0%}; 3x the forward FLOPs per token, char CNN counted per position, "
          "softmax over ~2,000 sampled classes).\n")


def section_precision(args) -> None:
    import torch

    def gemm_rate(m, k, n, dtype):
        a, b = torch.randn(m, k).to(dtype), torch.randn(k, n).to(dtype)
        for _ in range(3):
            a @ b
        reps, start = 0, time.perf_counter()
        while time.perf_counter() - start < 1.0:
            a @ b
            reps += 1
        return 2 * m * k * n * reps / (time.perf_counter() - start) / 1e9

    config, lm, optimizer, batches = _training_setup(args.config, args.segments, args.cache, threads=args.threads)
    shapes = {"LSTM step [x, h] x W (111 x 256 x 2048)": (111, 256, 2048),
              "highway (1400 x 1024 x 2048)": (1400, 1024, 2048),
              "sampled softmax (8000 x 128 x 2000)": (8000, 128, 2000)}
    rows = [[name, f"{gemm_rate(*s, torch.float32):.1f}", f"{gemm_rate(*s, torch.bfloat16):.1f}"]
            for name, s in shapes.items()]
    print("### Matrix products, float32 vs bfloat16 (GFLOP/s)\n")
    print(table(rows, ["product", "float32", "bfloat16"]))
    batches = list(itertools.islice(batches, args.steps + 3))
    start_state = {k: v.clone() for k, v in lm.state_dict().items()}
    results = []
    for name, autocast in (("float32", None), ("bfloat16 autocast", torch.autocast("cpu", dtype=torch.bfloat16))):
        lm.load_state_dict(start_state)
        optimizer = type(optimizer)(lm.parameters(), **optimizer.defaults)
        speed, loss = _timed_steps(lm, optimizer, batches, args.steps, config["training"]["grad_clip"], autocast)
        results.append([name, f"{speed:,.0f}", f"{loss:.4f}", f"{math.exp(loss):.1f}"])
    print(f"\n### Training steps, float32 vs bfloat16 autocast ({args.steps} steps from the same start)\n")
    print(table(results, ["precision", "tokens/s", "mean training loss", "exp(loss)"]))
    print("\nUnder autocast the LSTM recurrence stays float32 (its cell state would lose precision in "
          "bfloat16); the token encoder and the softmax products run in bfloat16.\n")


def section_batch(args) -> None:
    from spacy_elmo.pretrain import load_config

    base = load_config(args.config)["training"]["batch_tokens"]
    speeds: Dict[int, List[float]] = {base: [], 2 * base: []}
    for r in range(args.rounds):
        sizes = [base, 2 * base]
        for size in sizes if r % 2 == 0 else sizes[::-1]:
            speeds[size].append(_run_child(ROOT, args, Path(args.cache), size)["tokens_per_s"])
    rows = [[f"{size:,}", ", ".join(f"{s:,.0f}" for s in values), f"{statistics.median(values):,.0f}"]
            for size, values in speeds.items()]
    print(f"### Batch size: tokens/s of this code at {base:,} and {2 * base:,} tokens a batch\n")
    print(table(rows, ["tokens a batch", "per round", "median"]))
    print(f"\nratio {statistics.median(speeds[2 * base]) / statistics.median(speeds[base]):.2f}x\n")


SECTIONS: Dict[str, Callable] = {"speed": section_speed, "precision": section_precision, "batch": section_batch}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sections", default="speed,precision,batch", help=f"any of {','.join(SECTIONS)}")
    parser.add_argument("--baseline", default=BASELINE, help="git revision to compare against (speed)")
    parser.add_argument("--config", default=str(ROOT / "configs" / "pretrain_en_2x512_128.cfg"))
    parser.add_argument("--steps", type=POSITIVE, default=15)
    parser.add_argument("--rounds", type=POSITIVE, default=3)
    parser.add_argument("--segments", type=POSITIVE, default=30000,
                        help="segments of the pretraining text read (enough for --steps + 3 batches)")
    parser.add_argument("--threads", type=COUNT, default=0, help="threads for training (default: the config's)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    parser.add_argument("--batch-tokens", type=COUNT, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    sections = args.sections.split(",")
    unknown = [name for name in sections if name not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {unknown}; choose from {list(SECTIONS)}")
    from spacy_elmo.pretrain import load_config

    with one_line_errors():
        load_config(args.config)
    check_data(DATA / "pretrain_en" / "train.txt.gz")
    print(f"Machine: {machine()}\n{command_line()}\n")
    with tempfile.TemporaryDirectory() as cache:
        args.cache = cache
        check_segments(args, sections)
        for name in sections:
            SECTIONS[name](args)


if __name__ == "__main__":
    main()
