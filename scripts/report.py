"""Compare the baseline and ELMo pipelines: a markdown table and two plots.

    python scripts/report.py --metrics metrics --training training --plots plots [--prefix smoke-]

Reads metrics/{prefix}{ewt,ner}_{baseline,elmo}.json (written by
`python -m spacy_elmo evaluate`), training/{prefix}*/log.jsonl and wall_time.json
(the steps each run trained: its "steps").
Where metrics/{prefix}ewt_baseline_vectors.json exists (the baseline with the
biLM's word table as static vectors), the table gains its column and ELMo's
difference to it: what the biLM's contextual layers add beyond its vectors.
Where metrics/{prefix}ewt_elmo_finetuned.json exists (the ELMo pipeline fine-tuned
with its biLM unfrozen, scripts/finetune.py), it gets a column of its own too,
and its difference to the vectors baseline (to the baseline where there is none).
Writes metrics/{prefix}comparison.md, plots/{prefix}dev_curves.png and
plots/{prefix}layer_weights.png.
"""
import argparse
import json
import sys
from pathlib import Path

ROWS = [("UPOS", "ewt", "pos_acc"), ("XPOS", "ewt", "tag_acc"), ("UAS", "ewt", "dep_uas"), ("LAS", "ewt", "dep_las"),
        ("NER F1", "ner", "ents_f")]
RUNS = ["ewt_baseline", "ewt_baseline_vectors", "ewt_elmo", "ewt_elmo_finetuned", "ner_baseline", "ner_elmo"]
DEV_KEYS = {"ewt": ["tag_acc", "pos_acc", "dep_uas", "dep_las"], "ner": ["ents_f"]}


def _load(path: Path):
    """A JSON file's contents (None where there is none); a damaged one ends the report with one line
    naming it and the step that writes it, not a JSONDecodeError's traceback."""
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as err:  # json.JSONDecodeError, or bytes that are not UTF-8
        why = f"{err.msg} at line {err.lineno}, column {err.colno}" if isinstance(err, json.JSONDecodeError) else err
        raise SystemExit(f"{path}: not a readable JSON file ({why}), cut short or damaged; run the step that "
                         f"writes it again (`evaluate` for metrics/*.json, the run's training step for the "
                         f"files of training/)") from None


def _log(path: Path):
    """Evaluation rows of a run: its log.jsonl, or else the table spaCy printed to train.log.

    A last line torn by a run killed while appending it is left out; a bad line before it ends the
    report with one line naming the file and line (`spacy_elmo.resumable_training.read_log`)."""
    from spacy_elmo.resumable_training import read_log

    try:
        rows = read_log(path)
    except ValueError as err:
        raise SystemExit(str(err)) from None
    console = path.with_name("train.log")
    if not console.is_file():
        return rows
    # an interrupted run may not have flushed log.jsonl: then the console table has more
    from_console = _console_rows(console)
    return from_console if len(from_console) > len(rows) else rows


def _console_rows(console: Path):
    """The evaluation rows of the table `spacy train` printed."""
    import re

    rows, header = [], None
    for line in console.read_text(errors="replace").splitlines():
        line = re.sub(r"\x1b\[[0-9;]*m", "", line).strip()
        if line.startswith("E ") and "#" in line:
            header = re.split(r"\s{2,}", line)
            continue
        values = line.split()
        if header and len(values) == len(header) and values[0].isdigit():
            named = dict(zip(header, values))
            kept = {k: v for k, v in named.items() if k not in ("E", "#", "SCORE") and not k.startswith("LOSS")}
            scores = {k.lower(): float(v) for k, v in kept.items()}
            row = {"epoch": int(values[0]), "step": int(values[1]), "scores": scores, "score": float(named["SCORE"])}
            rows.append(row)
    return rows


def _percent(data, key: str):
    """A metrics file's score `key` in percent (None where the file or the score is absent)."""
    value = (data or {}).get("scores", {}).get(key)
    return None if value is None else 100 * value


def _cell(value, signed: bool = False) -> str:
    return "" if value is None else (f"{value:+.2f}" if signed else f"{value:.2f}")


def table(metrics: Path, training: Path, prefix: str) -> str:
    """The test scores (baseline, ELMo, their difference; the vectors baseline and the fine-tuned
    pipeline each with a column of their own and ELMo's difference to the baseline that is there)
    and the runs (steps trained, best step, wall time, what ended them)."""
    vectors = _load(metrics / f"{prefix}ewt_baseline_vectors.json")
    tuned = _load(metrics / f"{prefix}ewt_elmo_finetuned.json")
    header = ["metric (test)", "baseline"]
    if vectors:
        header += ["baseline + static vectors", "ELMo", "ELMo - baseline", "ELMo - baseline + vectors"]
    else:
        header += ["ELMo", "difference"]
    if tuned:  # a column of its own, with or without the vectors baseline
        header += ["ELMo fine-tuned", "fine-tuned - baseline + vectors" if vectors else "fine-tuned - baseline"]
    lines = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    for label, task, key in ROWS:
        b = _percent(_load(metrics / f"{prefix}{task}_baseline.json"), key)
        e = _percent(_load(metrics / f"{prefix}{task}_elmo.json"), key)
        if b is None or e is None:
            continue
        cells = [label, _cell(b)]
        v = _percent(vectors, key) if task == "ewt" else None
        if vectors:
            cells += [_cell(v), _cell(e), _cell(e - b, True), _cell(None if v is None else e - v, True)]
        else:
            cells += [_cell(e), _cell(e - b, True)]
        if tuned:
            t = _percent(tuned, key) if task == "ewt" else None
            reference = v if vectors else b
            cells += [_cell(t), _cell(None if t is None or reference is None else t - reference, True)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "| run | steps | best step | wall time | ended by |", "|---|---|---|---|---|"]
    for name in RUNS:
        run = training / f"{prefix}{name}"
        wall = _load(run / "wall_time.json")
        log = _log(run / "log.jsonl")
        if not wall or not log:
            continue
        # the run's own record of its best step; matching model-best's scores to a log row only for a run
        # from before it (evaluations that tie match several rows)
        best_step = wall.get("best_step")
        if not isinstance(best_step, int):
            best_step = _best_row(run / "model-best", log)["step"]
        minutes, ended = wall["seconds"] / 60, _ended_by(wall, log)
        lines.append(f"| {run.name} | {_steps(wall, log):,} | {best_step:,} | {minutes:.1f} min | {ended} |")
    return "\n".join(lines) + "\n"


def _steps(wall: dict, log: list) -> int:
    """The optimizer steps a run trained: wall_time.json's "steps" (the training state's count, resumed
    sessions included). Log rows number steps from 0, as spaCy does (a run capped at max_steps N
    trains N + 1 and logs its last evaluation as step N), so a wall_time.json without the count
    gives the last evaluation's step + 1: the steps trained up to it."""
    steps = wall.get("steps")
    return int(steps) if isinstance(steps, int) else log[-1]["step"] + 1


def _best_row(model_best: Path, log: list) -> dict:
    """The evaluation that produced model-best: the row matching its meta.json scores
    (console rows round the total score, so ties are common), else the top score."""
    meta = _load(model_best / "meta.json") or {}
    performance = {k: 100 * v for k, v in (meta.get("performance") or {}).items() if isinstance(v, (int, float))}

    def distance(row: dict) -> float:
        shared = [k for k in row.get("scores", {}) if k in performance and row["scores"][k] is not None]
        return max((abs(row["scores"][k] - performance[k]) for k in shared), default=float("inf"))

    matching = [row for row in log if distance(row) < 0.006]
    return matching[-1] if matching else max(log, key=lambda r: r.get("score", 0))


def _ended_by(wall: dict, log: list) -> str:
    """Why a training stopped: its time budget, its step cap, or early stopping."""
    if wall.get("stopped"):
        return str(wall["stopped"])
    command = wall.get("command", [])
    if "--training.max_steps" in command:
        cap = int(command[command.index("--training.max_steps") + 1])
        if log and log[-1]["step"] >= cap:
            return f"max_steps {cap:,}"
    return "early stopping"


def dev_curves(training: Path, out: Path, prefix: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = [("ewt", k) for k in DEV_KEYS["ewt"]] + [("ner", k) for k in DEV_KEYS["ner"]]
    fig, axes = plt.subplots(1, len(tasks), figsize=(4 * len(tasks), 3.5))
    for ax, (task, key) in zip(axes, tasks):
        for variant, style in (("baseline", "--"), ("baseline_vectors", ":"), ("elmo", "-"), ("elmo_finetuned", "-.")):
            log = _log(training / f"{prefix}{task}_{variant}" / "log.jsonl")
            points = [(r["step"], r["scores"][key]) for r in log if r.get("scores", {}).get(key) is not None]
            if points:
                ax.plot(*zip(*points), style, label=variant)
        ax.set_title(f"{task.upper()} dev {key}")
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)


def layer_weights(metrics: Path, out: Path, prefix: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mixes = {}
    for task in ("ewt", "ner"):
        data = _load(metrics / f"{prefix}{task}_elmo.json")
        if data:
            mixes.update(data.get("mixes", {}))
    if not mixes:
        return ""
    n_layers = len(next(iter(mixes.values()))["weights"])
    fig, ax = plt.subplots(figsize=(6, 3.5))
    width = 0.8 / len(mixes)
    for i, (name, mix) in enumerate(mixes.items()):
        xs = [j + i * width for j in range(n_layers)]
        ax.bar(xs, mix["weights"], width, label=f"{name} (gamma {mix['gamma']:.2f})")
    ax.set_xticks([j + 0.4 - width / 2 for j in range(n_layers)])
    ax.set_xticklabels(["layer 0 (chars)"] + [f"layer {j} (LSTM {j})" for j in range(1, n_layers)])
    ax.set_ylabel("softmax(s)")
    ax.set_title("What each task learned to read from the biLM")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    lines = ["| component | " + " | ".join(f"layer {j}" for j in range(n_layers)) + " | gamma |",
             "|---|" + "---|" * (n_layers + 1)]
    for name, mix in mixes.items():
        lines.append(f"| {name} | " + " | ".join(f"{w:.3f}" for w in mix["weights"]) + f" | {mix['gamma']:.3f} |")
    return "\n".join(lines) + "\n"


def check_metrics(metrics: Path, prefix: str) -> None:
    """Exit with one line naming the folder unless it holds a baseline and an ELMo metrics file of one
    task (else the report would be an empty table, and look like a result)."""
    if not metrics.is_dir():
        raise SystemExit(f"--metrics {metrics}: no such folder (the `evaluate` step writes it)")
    pairs = [task for task in ("ewt", "ner")
             if all((metrics / f"{prefix}{task}_{run}.json").is_file() for run in ("baseline", "elmo"))]
    if not pairs:
        expected = ", ".join(f"{prefix}{task}_{run}.json" for task in ("ewt", "ner") for run in ("baseline", "elmo"))
        raise SystemExit(f"--metrics {metrics}: no baseline and ELMo metrics of a task to compare "
                         f"(expected {expected}; the `evaluate` step writes them)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--metrics", default="metrics", help="the evaluate step's JSON files; comparison.md goes here")
    parser.add_argument("--training", default="training", help="the runs' folders (log.jsonl, wall_time.json)")
    parser.add_argument("--plots", default="plots", help="where the two plots go")
    parser.add_argument("--prefix", default="", help="files with this prefix (smoke- for the smoke workflow)")
    args = parser.parse_args()
    metrics, training, plots = Path(args.metrics), Path(args.training), Path(args.plots)
    check_metrics(metrics, args.prefix)  # before anything is drawn or written
    plots.mkdir(parents=True, exist_ok=True)
    text = "## Baseline vs ELMo on UD English-EWT test (UNER test for NER)\n\n" + table(metrics, training, args.prefix)
    (metrics / f"{args.prefix}comparison.md").write_text(text, encoding="utf-8")  # the table needs no plotting
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("matplotlib is not installed (pip install 'spacy-elmo[plot]'): the plots are left out", file=sys.stderr)
    else:
        dev_curves(training, plots / f"{args.prefix}dev_curves.png", args.prefix)
        mixes = layer_weights(metrics, plots / f"{args.prefix}layer_weights.png", args.prefix)
        if mixes:
            text += "\n## Learned layer weights\n\n" + mixes
            (metrics / f"{args.prefix}comparison.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
