"""`ab`: `embed` (small shapes, token cache on, HDF5 written) on each backend, and with the
model-level speed-ups off, runs alternating in one process, median per setting."""
import statistics
import tempfile
from pathlib import Path
from typing import Dict, List, Tuple

from common import embed_file_speed, ewt_sentences, matmul_rate, random_model, scaled_goal, table, write_sentences

BASE = "mkl, every boundary step"


def run(args) -> str:
    from spacy_elmo.bilm import BiLM
    from spacy_elmo.bilm.engine import backends, base

    model = random_model("small")
    sentences = ewt_sentences(args.sentences)
    n_tokens = sum(map(len, sentences))
    default_cached_bytes = base.KEPT_WEIGHTS_MAX_BYTES

    def full_forward(batch, keep_boundaries=False, state=None):
        # an explicit zero state takes the full path: every row runs its <S> and </S> steps
        if state is None:
            state = model.lstm.zero_state(len(batch), next(model.parameters()))
        return BiLM.forward(model, batch, keep_boundaries=keep_boundaries, state=state)

    def configure(backend: str, skip_boundary_steps: bool = True, keep_weights: bool = True) -> None:
        model.backend = backend
        base.KEPT_WEIGHTS_MAX_BYTES = default_cached_bytes if keep_weights else -1
        if skip_boundary_steps:
            model.__dict__.pop("forward", None)
        else:
            setattr(model, "forward", full_forward)  # this instance only

    # setting -> (backend, boundary steps skipped, inference weights kept)
    settings: Dict[str, Tuple[str, bool, bool]] = {
        BASE: ("mkl", False, True), "mkl": ("mkl", True, True), "reference": ("reference", True, True)}
    for name in backends.available()[2:]:
        settings[name] = (name, True, True)
        settings[f"{name}, inference weights rebuilt per batch"] = (name, True, False)
    speeds: Dict[str, List[float]] = {name: [] for name in settings}
    rate_before = matmul_rate()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            text = write_sentences(sentences, Path(tmp))
            for _ in range(args.ab_runs):
                for name, setting in settings.items():
                    configure(*setting)
                    speeds[name].append(embed_file_speed(model, text, n_tokens))
    finally:
        configure("auto")
    rate = max(rate_before, matmul_rate())
    rows = []
    for name, values in speeds.items():
        ratios = [v / b for v, b in zip(values, speeds[BASE])]
        rows.append([name, f"{statistics.median(values):,.0f}", f"{statistics.median(ratios):.2f}x",
                     ", ".join(f"{r:.2f}" for r in ratios)])
    return (
        f"### A/B: `embed`, small shapes, {len(sentences):,} sentences ({n_tokens:,} tokens), "
        f"{args.ab_runs} alternating runs per setting (auto = {backends.resolve('auto')} here)\n\n"
        + table(rows, ["setting", "median tokens/s", "median ratio to the first", "per-run ratios"])
        + f"\n\nMatmul rate (higher of before/after): {rate / 1e9:.1f} GFLOP/s; the goal scaled to it: "
        f"{scaled_goal(rate):,.0f} tokens/s.\n"
    )
