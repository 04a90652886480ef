"""Pretrain a biLM in a short GPU slot, and bring the weights back in files under 16 MB.

GPU time comes in short slots on a machine that has PyTorch but not spaCy and
cannot download anything, and files come back from it at most 16 MiB each.
Pretraining needs neither spaCy nor thinc when its text is already tokenized,
so the text is tokenized here, with spaCy, and the machine gets only the few
small packages the config system needs. Three steps:

    python scripts/gpu_pretrain.py prepare [--work runs/gpu]
        here: the pretraining text tokenized by the config's spaCy tokenizer
        (tokens joined by spaces: the tokens `pretrain` reads from the raw
        text) and wheels of NEEDS for the machine's Python 3.12 (the package
        itself pure Python, without its spaCy and thinc dependencies), into
        WORK (ignored by git; the device tool carries it);
    python scripts/gpu_pretrain.py run OUT [--work runs/gpu] [--minutes 8] [--dry-run]
        there: install what is missing of NEEDS and the package from the
        wheels, offline, and pretrain on the tokenized text ([corpus]
        tokenizer = "whitespace") for a fixed number of minutes on cuda:0 in
        bfloat16 (checkpoints every 50 steps, so an interrupted slot loses
        little; a second slot resumes),
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
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Dict

ROOT = Path(__file__).resolve().parent.parent
PART_BYTES = 15 << 20
# what `spacy_elmo pretrain` on tokenized text imports beyond what the machine has (PyTorch,
# numpy, h5py, safetensors, tqdm, typer): the config system and its validation; pip adds their
# own dependencies (pydantic-core, annotated-types, typing-inspection, typing-extensions)
NEEDS = ["confection", "pydantic", "srsly", "catalogue", "wasabi"]
# the raw text under --data and the tokenized text prepare writes for each
TEXTS = {"train.txt.gz": "train.tok.txt.gz", "heldout.txt.gz": "heldout.tok.txt.gz"}


def requirements() -> list:
    """NEEDS at the versions installed here, which the tests ran with (unpinned where one is missing)."""
    pinned = []
    for name in NEEDS:
        try:
            pinned.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            pinned.append(name)
    return pinned


def tokenize_texts(source: Path, data: Path, config: str) -> None:
    """TEXTS' raw files in `source` as `config`'s tokenizer splits them, into `data` (copied as
    they are where the config already reads tokenized text)."""
    from spacy_elmo.pretrain.settings import load_config
    from spacy_elmo.pretrain.text_corpus import pretokenize

    corpus = load_config(config)["corpus"]
    data.mkdir(parents=True, exist_ok=True)
    for raw, tokenized in TEXTS.items():
        if corpus["tokenizer"] == "whitespace":
            shutil.copy2(source / raw, data / tokenized)
        else:
            lines = pretokenize(source / raw, data / tokenized, corpus["lang"])
            print(f"{source / raw}: {lines:,} lines tokenized by spacy.blank({corpus['lang']!r})")


def prepare(args) -> None:
    work = Path(args.work)
    tokenize_texts(Path(args.data), work / "data", args.config)
    wheels = work / "wheels"
    wheels.mkdir(exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--dest", str(wheels), "--only-binary=:all:",
                    "--python-version", args.python_version, "--platform", "manylinux2014_x86_64",
                    "--platform", "manylinux_2_17_x86_64", *requirements()], check=True)
    # the package itself, pure Python there (the compiled kernel is for x86 CPUs only)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(wheels), str(ROOT)],
                   check=True, env={**os.environ, "SPACY_ELMO_NO_EXTENSION": "1"})
    size = sum(f.stat().st_size for f in work.rglob("*") if f.is_file())
    print(f"prepared {work} ({size / 2**20:.1f} MiB): run on the device with carry=[{str(work)!r}]:\n"
          f"  python3 scripts/gpu_pretrain.py run $OUT --work {work} --minutes {args.minutes}")


def _install_if_missing(work: Path) -> None:
    """NEEDS (with their dependencies) and the package, from the wheels, where this Python lacks them;
    the package without its dependencies, spaCy and thinc among them, which pretraining does not use."""
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--find-links", str(work / "wheels")]
    missing = [name for name in NEEDS if importlib.util.find_spec(name) is None]
    if missing:
        subprocess.run(pip + missing, check=True)
    if importlib.util.find_spec("spacy_elmo") is None:
        subprocess.run(pip + ["--no-deps", "spacy-elmo"], check=True)


def run(args, overrides) -> None:
    work, out = Path(args.work), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not args.dry_run:
        _install_if_missing(work)
    run_dir = work / "run"
    data = work / "data"
    command = [sys.executable, "-m", "spacy_elmo", "pretrain", args.config, str(run_dir), "--quiet",
               "--paths.train", str(data / TEXTS["train.txt.gz"]), "--paths.dev", str(data / TEXTS["heldout.txt.gz"]),
               "--corpus.tokenizer", "whitespace",
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
    manifest: Dict[str, Dict[str, Any]] = {}
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
    config = str(ROOT / "configs" / "pretrain_gpu_2x1024_256.cfg")
    p = sub.add_parser("prepare")
    p.add_argument("--work", default="runs/gpu")
    p.add_argument("--config", default=config, help="its [corpus] tokenizer and lang tokenize the text")
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "pretrain_en"))
    p.add_argument("--python-version", default="3.12")
    p.add_argument("--minutes", type=float, default=8)
    r = sub.add_parser("run")
    r.add_argument("out")
    r.add_argument("--work", default="runs/gpu")
    r.add_argument("--config", default=config)
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
