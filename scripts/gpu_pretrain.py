"""Pretrain a biLM in a short GPU slot, and bring the weights back in files under 16 MB.

GPU time comes in short slots (15 minutes in all here) on a machine that has
PyTorch but not spaCy, cannot download anything, receives the checkout plus
a few carried folders (64 MiB in all) and returns at most 8 files of 16 MiB
from $OUT. Pretraining needs neither spaCy nor thinc when its text is already
tokenized, so the text is tokenized here, with spaCy, and the machine gets
only the few small packages the config system needs. Three steps:

    python scripts/gpu_pretrain.py prepare [--work runs/gpu] [--word-table runs/glove_table]
        here: the pretraining text tokenized by the config's spaCy tokenizer
        (tokens joined by spaces: the tokens `pretrain` reads from the raw
        text), the training text cut to what fits the 64 MiB beside the
        checkout, the word table (the recipe of the embedded model: a GloVe
        table beside the character CNN, also starting the softmax), and
        wheels of NEEDS for the machine's Python 3.12, into WORK (ignored by
        git; the device tool carries it). It prints the device call to make.
    python scripts/gpu_pretrain.py run OUT [--work runs/gpu] [--minutes 6] [--dry-run]
        there: install what is missing of NEEDS from the wheels, offline, and
        pretrain the package from the checkout (PYTHONPATH, no install) on the
        tokenized text ([corpus] tokenizer = "whitespace") for a fixed number
        of minutes on cuda:0 in bfloat16, then write model-best without its
        softmax (the embedding part) as parts of at most 15 MiB, a manifest
        (sha256 of each whole file; files under 1 MiB inline), the run's log
        and its console output into OUT: at most 7 files. No checkpoints:
        they would never come back (a fresh machine starts bare). --dry-run
        does the same on the CPU for a few steps, in a temporary folder, so
        nothing of it travels.
    python scripts/gpu_pretrain.py join OUT MODEL_DIR
        here: reassemble the parts into a native model directory, checking
        every file against the manifest.

The config (default configs/pretrain_gpu_2x1024_256.cfg) and any
`--section.key value` overrides are passed to `spacy_elmo pretrain`.
"""
import argparse
import base64
import gzip
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any, Dict, List

ROOT = Path(__file__).resolve().parent.parent
PART_BYTES = 15 << 20
INLINE_BYTES = 1 << 20  # smaller files travel inside the manifest
CALL_LIMIT = 600  # seconds the device runs one call for
SETUP_SECONDS = 240  # of them, for installing, tokenizing and writing the model beside the training
MAX_MINUTES = (CALL_LIMIT - SETUP_SECONDS) / 60
# what may travel to the machine (the checkout and the carried folders) and what is left for WORK
TRAVEL_LIMIT = 64 << 20
TRAVEL_MARGIN = 2 << 20
# what `spacy_elmo pretrain` on tokenized text imports beyond what the machine has (PyTorch,
# numpy, h5py, safetensors, tqdm, typer): the config system and its validation; pip adds their
# own dependencies (pydantic-core, annotated-types, typing-inspection, typing-extensions)
NEEDS = ["confection", "pydantic", "srsly", "catalogue", "wasabi"]
# the raw text under --data and the tokenized text prepare writes for each
TEXTS = {"train.txt.gz": "train.tok.txt.gz", "heldout.txt.gz": "heldout.tok.txt.gz"}
# what a local run leaves in WORK and must not travel (a dry run now writes elsewhere)
STALE = ("run", "model-embedding", "corpus-cache")


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


def checkout_bytes() -> int:
    """The bytes of the checkout that travel: tracked files and untracked ones git does not ignore."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.split(b"\0")
    return sum((ROOT / os.fsdecode(name)).stat().st_size for name in listed
               if name and (ROOT / os.fsdecode(name)).is_file())


def folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def fit_text(path: Path, budget: int) -> int:
    """Keep the first lines of the gzipped text `path` that fit `budget` compressed bytes; the lines kept."""
    size = path.stat().st_size
    if size <= budget:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            return sum(1 for _ in handle)
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        lines = handle.readlines()
    keep = int(len(lines) * budget / size * 0.98)  # compressed size is close to proportional to the lines
    while True:
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.writelines(lines[:keep])
        if path.stat().st_size <= budget:
            return keep
        keep = int(keep * 0.95)


def prepare(args) -> None:
    work = Path(args.work)
    for name in STALE:
        if (work / name).exists():
            print(f"removing {work / name}: left by a local run, it must not travel")
            shutil.rmtree(work / name)
    tokenize_texts(Path(args.data), work / "data", args.config)
    if args.word_table:
        shutil.rmtree(work / "word_table", ignore_errors=True)
        shutil.copytree(args.word_table, work / "word_table")
    wheels = work / "wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    wheels.mkdir()
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--dest", str(wheels), "--only-binary=:all:",
                    "--python-version", args.python_version, "--platform", "manylinux2014_x86_64",
                    "--platform", "manylinux_2_17_x86_64", *requirements()], check=True)
    train = work / "data" / TEXTS["train.txt.gz"]
    others = checkout_bytes() + folder_bytes(work) - train.stat().st_size
    budget = TRAVEL_LIMIT - TRAVEL_MARGIN - others
    if budget < (1 << 20):
        sys.exit(f"the checkout and {work} leave {budget / 2**20:.1f} MiB of the device's 64 MiB for the text")
    kept = fit_text(train, budget)
    total = checkout_bytes() + folder_bytes(work)
    print(f"prepared {work}: {kept:,} training lines; checkout + {work} = {total / 2**20:.1f} MiB of 64")
    config = Path(args.config).resolve()
    config_arg = config.relative_to(ROOT).as_posix() if config.is_relative_to(ROOT) else str(config)
    print(f"on the device: run(carry=[{str(work)!r}], timeout_s={int(args.minutes * 60) + SETUP_SECONDS}, command=\n"
          f"  'set -o pipefail; export PYTHONUNBUFFERED=1; nvidia-smi -L; "
          f"python3 scripts/gpu_pretrain.py run $OUT --work {work} --config {config_arg} --minutes {args.minutes:g}')")


def _install_if_missing(work: Path) -> None:
    """NEEDS (with their dependencies) from the wheels, where this Python lacks them. The package
    itself runs from the checkout (PYTHONPATH): its dependencies spaCy and thinc are not needed."""
    missing = [name for name in NEEDS if importlib.util.find_spec(name) is None]
    if missing:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--find-links",
                        str(work / "wheels"), *missing], check=True)


def _run_logged(command: List[str], log: Path, env: Dict[str, str]) -> int:
    """Run `command`, its output both printed and written to `log` as it comes (so it comes back even
    when the call is cut short); the exit status."""
    with open(log, "w", encoding="utf-8") as handle:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        assert process.stdout is not None
        for line in process.stdout:
            sys.stdout.write(line)
            handle.write(line)
            handle.flush()
        return process.wait()


def run(args, overrides) -> None:
    work, out = Path(args.work), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = work / "data"
    if args.dry_run:
        scratch = Path(tempfile.mkdtemp(prefix="gpu-pretrain-dry-run-"))
    else:
        stale = [name for name in STALE if (work / name).exists()]
        if stale:
            sys.exit(f"{work} holds {stale} from a local run; run `prepare` again (it removes them)")
        _install_if_missing(work)
        scratch = work
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(ROOT)) if p)}
    run_dir = scratch / "run"
    command = [sys.executable, "-m", "spacy_elmo", "pretrain", args.config, str(run_dir), "--quiet",
               "--paths.train", str(data / TEXTS["train.txt.gz"]), "--paths.dev", str(data / TEXTS["heldout.txt.gz"]),
               "--corpus.tokenizer", "whitespace", "--paths.cache", str(scratch / "corpus-cache"),
               "--training.checkpoint_every", "1000000000", "--training.max_minutes", str(args.minutes)]
    if (work / "word_table").is_dir():
        command += ["--paths.word_table", str(work / "word_table"), "--paths.softmax_init", str(work / "word_table")]
    if args.dry_run:
        command += ["--training.max_steps", str(args.dry_run_steps), "--training.precision", "float32"]
    else:
        command += ["--gpu-id", "0", "--training.precision", "bfloat16"]
    try:
        status = _run_logged(command + overrides, out / "pretrain.log", env)
        if (run_dir / "log.jsonl").exists():
            shutil.copy2(run_dir / "log.jsonl", out / "log.jsonl")
        if status not in (0, 130, 143):  # 130/143: stopped by SIGINT/SIGTERM, model-last written
            sys.exit(status)
        best = run_dir / "model-best" if (run_dir / "model-best").exists() else run_dir / "model-last"
        embedding = scratch / "model-embedding"
        subprocess.run([sys.executable, "-m", "spacy_elmo", "convert", str(best), str(embedding), "--no-softmax",
                        "--table-float16"], check=True, env=env)
        split(embedding, out)
    finally:
        if args.dry_run and not args.keep_dry_run:
            shutil.rmtree(scratch, ignore_errors=True)
        elif args.dry_run:
            print(f"dry run kept in {scratch}")


def split(model_dir: Path, out: Path) -> None:
    """Every file of model_dir as parts of at most PART_BYTES (inline in the manifest under
    INLINE_BYTES), plus manifest.json."""
    manifest: Dict[str, Dict[str, Any]] = {}
    for path in sorted(model_dir.iterdir()):
        data = path.read_bytes()
        entry: Dict[str, Any] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
        if len(data) < INLINE_BYTES:
            entry["inline"] = base64.b64encode(data).decode("ascii")
        else:
            entry["parts"] = [f"{path.name}.{i:02d}" for i in range(-(-len(data) // PART_BYTES))]
            for i, name in enumerate(entry["parts"]):
                (out / name).write_bytes(data[i * PART_BYTES : (i + 1) * PART_BYTES])
        manifest[path.name] = entry
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    n_files = sum(len(v.get("parts", ())) for v in manifest.values()) + 1
    print(f"wrote {n_files} files to {out}")
    if n_files > 6:
        print(f"warning: {n_files} files, the log and the console output are more than the 8 files the device "
              "tool brings back")


def join(args) -> None:
    parts_dir, model_dir = Path(args.parts), Path(args.model)
    if not (parts_dir / "manifest.json").is_file():
        sys.exit(f"{parts_dir}: no manifest.json, so not the parts of a run (name the folder the device call's "
                 "files were fetched to)")
    manifest = json.loads((parts_dir / "manifest.json").read_text(encoding="utf-8"))
    model_dir.mkdir(parents=True, exist_ok=True)
    for name, entry in manifest.items():
        if "inline" in entry:
            data = base64.b64decode(entry["inline"])
        else:
            data = b"".join((parts_dir / part).read_bytes() for part in entry["parts"])
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            sys.exit(f"{name}: the parts do not add up to the file that was split (sha256 differs); copy them again")
        (model_dir / name).write_bytes(data)
    print(f"joined {len(manifest)} files into {model_dir}")


def build_parser() -> argparse.ArgumentParser:
    """The three steps' options (`--help`, and the docs' tables, which the tests check against it)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="step", required=True)
    config = str(ROOT / "configs" / "pretrain_gpu_2x1024_256.cfg")
    p = sub.add_parser("prepare", help="here: tokenize the text, gather what travels into WORK")
    p.add_argument("--work", default="runs/gpu", help="the folder the device call carries (%(default)s)")
    p.add_argument("--config", default=config, help="its [corpus] tokenizer and lang tokenize the text")
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "pretrain_en"),
                   help="the pretraining text's folder: train.txt.gz, heldout.txt.gz")
    p.add_argument("--word-table", help="a table scripts/build_word_table.py built (the embedded model's recipe)")
    p.add_argument("--python-version", default="3.12", help="the device machine's Python, for the wheels")
    p.add_argument("--minutes", type=float, default=6, help="training minutes the printed call asks for")
    r = sub.add_parser("run", help="on the device: pretrain and write the model in parts into OUT")
    r.add_argument("out", help="where the model's parts, manifest and log go ($OUT)")
    r.add_argument("--work", default="runs/gpu", help="the carried folder prepare wrote")
    r.add_argument("--config", default=config, help="the pretraining config")
    r.add_argument("--minutes", type=float, default=6, help="minutes of training")
    r.add_argument("--dry-run", action="store_true", help="on the CPU, a few steps, float32, in a temporary folder")
    r.add_argument("--dry-run-steps", type=int, default=4, help="steps of the dry run")
    r.add_argument("--keep-dry-run", action="store_true", help="keep the dry run's temporary folder (printed)")
    j = sub.add_parser("join", help="here: reassemble the parts into a model directory")
    j.add_argument("parts", help="the folder run wrote (the device call's files)")
    j.add_argument("model", help="the native model directory to write")
    return parser


def main() -> None:
    parser = build_parser()
    args, overrides = parser.parse_known_args()
    if overrides and args.step != "run":  # only run passes pretraining overrides on; a typo must not pass
        parser.error(f"unrecognized arguments: {' '.join(overrides)}")
    if args.step == "prepare" and not 0 < args.minutes <= MAX_MINUTES:
        parser.error(f"--minutes must be above 0 and at most {MAX_MINUTES:g}: the device runs a call for at most "
                     f"{CALL_LIMIT} s, {SETUP_SECONDS} of them for starting and writing the model")
    if args.step == "prepare":
        prepare(args)
    elif args.step == "run":
        run(args, overrides)
    else:
        join(args)


if __name__ == "__main__":
    main()
