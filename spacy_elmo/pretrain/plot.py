"""A PNG of the training and dev perplexity curves of a run's log."""
import json
from pathlib import Path
from typing import List, Optional


def read_log(path: Path) -> List[dict]:
    """The rows of a pretraining log.jsonl ([] where there is none), skipping each line that is no row.

    A line torn by a crash, or holding a byte that is not UTF-8, is skipped, not fatal: each line is
    decoded on its own (a stray byte failed the whole file with a UnicodeDecodeError, and with it the
    plot and a --resume that reads the log)."""
    if not Path(path).is_file():
        return []
    rows = []
    for raw in Path(path).read_bytes().splitlines():
        if raw.strip():
            try:
                row = json.loads(raw.decode("utf-8"))
            except ValueError:  # UnicodeDecodeError and JSONDecodeError alike
                continue
            if isinstance(row, dict):
                rows.append(row)
    return rows


def keep_rows_through(path: Path, step: int) -> None:
    """Rewrite a run's log.jsonl (atomically) with only its rows up to `step` (a resumed run's checkpoint):
    the rows after it are those of the session that was killed, whose steps the resumed run trains, and
    logs, again; kept, they showed the killed session's numbers (a learning rate lowered for the
    resume, say) and hid the resumed run's. Lines that are no row are dropped."""
    from ..io.atomic import atomic_path

    if not Path(path).is_file():
        return
    rows = [row for row in read_log(path) if _row_step(row) <= step]
    with atomic_path(path) as tmp:
        tmp.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def _row_step(row: dict) -> int:
    """A row's step: an evaluation's `step`, a replica checksum row's `at_step` (else 0: kept)."""
    value = row.get("step", row.get("at_step", 0))
    return value if isinstance(value, int) else 0


def plot_perplexity(log_path: Path, out_path: Path, title: Optional[str] = None) -> Optional[Path]:
    """Write the plot; returns None when matplotlib or data are missing."""
    rows = [r for r in read_log(log_path) if "step" in r]
    if not rows:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(7, 4.5))
    steps = [r["step"] for r in rows]
    series = [
        ("train_ppl", "train (training objective)", "-"),
        ("dev_forward", "dev forward", "--"),
        ("dev_backward", "dev backward", "--"),
        ("dev_mean", "dev mean", "-"),
    ]
    for key, label, style in series:
        points = [(s, r[key]) for s, r in zip(steps, rows) if r.get(key) is not None]
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], style, label=label, marker=".")
    ax.set_yscale("log")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("perplexity")
    ax.set_title(title or "biLM pretraining")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out_path = Path(out_path)
    fig.savefig(out_path, dpi=100)
    plt.close(fig)
    return out_path


__all__ = ["keep_rows_through", "plot_perplexity", "read_log"]
