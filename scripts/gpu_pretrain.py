"""Pretrain a biLM in a short GPU slot, and bring the weights back in files under 16 MB.

GPU time comes in short slots on a machine that has PyTorch but not spaCy and
cannot download anything, and files come back from it at most 16 MiB each.
Three steps:

    python scripts/gpu_pretrain.py prepare [--work runs/gpu]
        here: wheels of the packages the machine lacks (for its Python 3.12,
        the package itself pure Python) and the pretraining text, into WORK
        (ignored by git; the device tool carries it);
    python scripts/gpu_pretrain.py run OUT [--work runs/gpu] [--minutes 8] [--dry-run]
        there: install the wheels offline where spaCy is missing, pretrain for a
        fixed number of minutes on cuda:0 in bfloat16 (checkpoints every 50
        steps, so an interrupted slot loses little; a second slot resumes),
        then write model-best without its softmax (the embedding part, at
        most 7 files back) as parts of at most 15 MiB plus a manifest (sha256
        of each whole file) and the run's log into OUT; --dry-run does the
        same on the CPU for a few steps;
    python scripts/gpu_pretrain.py join OUT MODEL_DIR
        here: reassemble the parts into a native model directory, checking
        every file against the manifest.

The config (default configs/pretrain_gpu_2x1024_256.cfg) and any
`--section.key value` overrides are passed to `spacy_elmo pretrain`.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PART_BYTES = 15 << 20
# what spacy_elmo needs beyond PyTorch, numpy, h5py, safetensors, tqdm and typer
WHEELS = ["spacy>=3.7,<4", "thinc>=8.2,<9", "srsly>=2.4", "catalogue>=2.0", "wasabi>=1.1"]


def prepare(args) -> None:
    work = Path(args.work)
    (work / "data").mkdir(parents=True, exist_ok=True)
    for name in ("train.txt.gz", "heldout.txt.gz"):
        shutil.copy2(Path(args.data) / name, work / "data" / name)
    wheels = work / "wheels"
    wheels.mkdir(exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--dest", str(wheels), "--only-binary=:all:",
                    "--python-version", args.python_version, "--platform", "manylinux2014_x86_64",
                    "--platform", "manylinux_2_17_x86_64", *WHEELS], check=True)
    # the package itself, pure Python there (the compiled kernel is for x86 CPUs only)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(wheels), str(ROOT)],
                   check=True, env={**os.environ, "SPACY_ELMO_NO_EXTENSION": "1"})
    size = sum(f.stat().st_size for f in work.rglob("*") if f.is_file())
    print(f"prepared {work} ({size / 2**20:.1f} MiB): run on the device with carry=[{str(work)!r}]:\n"
          f"  python3 scripts/gpu_pretrain.py run $OUT --work {work} --minutes {args.minutes}")


def _install_if_missing(work: Path) -> None:
    try:
        import spacy  # noqa: F401
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--find-links",
                        str(work / "wheels"), "spacy-elmo"], check=True)


def run(args, overrides) -> None:
    work, out = Path(args.work), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not args.dry_run:
        _install_if_missing(work)
    run_dir = work / "run"
    data = work / "data"
    command = [sys.executable, "-m", "spacy_elmo", "pretrain", args.config, str(run_dir), "--quiet",
               "--paths.train", str(data / "train.txt.gz"), "--paths.dev", str(data / "heldout.txt.gz"),
               "--paths.cache", str(work / "corpus-cache"), "--training.checkpoint_every", "50",
               "--training.max_minutes", str(args.minutes)]
    if args.dry_run:
        command += ["--training.max_steps", str(args.dry_run_steps), "--training.precision", "float32"]
    else:
        command += ["--gpu-id", "0", "--training.precision", "bfloat16"]
    if (run_dir / "checkpoint.pt").exists():
        command.append("--resume")  # a second slot continues the first
    done = subprocess.run(command + overrides)
    if (run_dir / "log.jsonl").exists():
        shutil.copy2(run_dir / "log.jsonl", out / "log.jsonl")
    if done.returncode not in (0, 130):  # 130: stopped by a signal, checkpoint and model-last written
        sys.exit(done.returncode)
    best = run_dir / "model-best" if (run_dir / "model-best").exists() else run_dir / "model-last"
    embedding = work / "model-embedding"
    subprocess.run([sys.executable, "-m", "spacy_elmo", "convert", str(best), str(embedding), "--no-softmax"],
                   check=True)
    split(embedding, out)


def split(model_dir: Path, out: Path) -> None:
    """Every file of model_dir as parts of at most PART_BYTES, plus manifest.json."""
    manifest = {}
    for path in sorted(model_dir.iterdir()):
        data = path.read_bytes()
        parts = [f"{path.name}.{i:02d}" for i in range(max(1, -(-len(data) // PART_BYTES)))]
        for i, name in enumerate(parts):
            (out / name).write_bytes(data[i * PART_BYTES : (i + 1) * PART_BYTES])
        manifest[path.name] = {"parts": parts, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    n_files = sum(len(v["parts"]) for v in manifest.values()) + 1
    print(f"wrote {n_files} files to {out}")
    if n_files > 7:
        print(f"warning: {n_files} files and the log are more than the 8 files the device tool brings back")


def join(args) -> None:
    parts_dir, model_dir = Path(args.parts), Path(args.model)
    manifest = json.loads((parts_dir / "manifest.json").read_text(encoding="utf-8"))
    model_dir.mkdir(parents=True, exist_ok=True)
    for name, entry in manifest.items():
        data = b"".join((parts_dir / part).read_bytes() for part in entry["parts"])
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            sys.exit(f"{name}: the parts do not add up to the file that was split (sha256 differs); copy them again")
        (model_dir / name).write_bytes(data)
    print(f"joined {len(manifest)} files into {model_dir}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="step", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--work", default="runs/gpu")
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "pretrain_en"))
    p.add_argument("--python-version", default="3.12")
    p.add_argument("--minutes", type=float, default=8)
    r = sub.add_parser("run")
    r.add_argument("out")
    r.add_argument("--work", default="runs/gpu")
    r.add_argument("--config", default=str(ROOT / "configs" / "pretrain_gpu_2x1024_256.cfg"))
    r.add_argument("--minutes", type=float, default=8)
    r.add_argument("--dry-run", action="store_true", help="on the CPU, a few steps, float32")
    r.add_argument("--dry-run-steps", type=int, default=4)
    j = sub.add_parser("join")
    j.add_argument("parts")
    j.add_argument("model")
    args, overrides = parser.parse_known_args()
    if args.step == "prepare":
        prepare(args)
    elif args.step == "run":
        run(args, overrides)
    else:
        join(args)


if __name__ == "__main__":
    main()
