"""Run `spacy train` for the project, recording the wall time and choosing the biLM.

    python scripts/train.py CONFIG OUTPUT_DIR --train T.spacy --dev D.spacy
        [--elmo-model shipped|pretrained] [--pretrained-dir DIR] [--max-steps N]
        [--gpu-id G] [--max-minutes M] [SPACY TRAIN OVERRIDES...]

The console log goes to OUTPUT_DIR/train.log as well as stdout, each
evaluation to OUTPUT_DIR/log.jsonl, and the wall time to OUTPUT_DIR/wall_time.json.
With --max-minutes, training is interrupted (SIGINT, so spaCy still saves
model-last and keeps model-best) once the time budget is spent; the exit code
is then 0 and wall_time.json says `"stopped": "time budget"`.
"""
import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config")
    parser.add_argument("output")
    parser.add_argument("--train", required=True)
    parser.add_argument("--dev", required=True)
    parser.add_argument("--elmo-model", choices=["shipped", "pretrained", "none"], default="none")
    parser.add_argument("--pretrained-dir", default="training/pretrain/model-best")
    parser.add_argument("--max-steps", type=int, default=0)
    parser.add_argument("--gpu-id", type=int, default=-1)
    parser.add_argument("--max-minutes", type=float, default=0.0, help="interrupt training after this many minutes")
    args, extra = parser.parse_known_args()
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable, "-m", "spacy", "train", args.config, "--output", str(output),
        "--paths.train", args.train, "--paths.dev", args.dev, "--gpu-id", str(args.gpu_id),
        "--training.logger.@loggers", "spacy.ConsoleLogger.v3",
        "--training.logger.output_file", str(output / "log.jsonl"),
        "--training.logger.progress_bar", "null",
    ]
    if args.elmo_model == "pretrained":
        # the config's loader (the embedded biLM) replaced by the pretrained model's directory
        loader = {"@model_loaders": "spacy-elmo.NativeLoader.v1", "path": args.pretrained_dir}
        command += ["--initialize.components.elmo.loader", json.dumps(loader)]
    if args.max_steps:
        command += ["--training.max_steps", str(args.max_steps)]
    command += extra
    (output / "log.jsonl").unlink(missing_ok=True)
    start = time.perf_counter()
    with open(output / "train.log", "w", encoding="utf-8") as log:
        # a shell starts background jobs with SIGINT ignored, and Python children keep
        # that: restore the default so that Ctrl-C and the time budget reach spaCy
        restore = (lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)) if os.name == "posix" else None
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   preexec_fn=restore)
        fired = threading.Event()

        def interrupt() -> None:
            fired.set()
            process.send_signal(signal.SIGINT)

        budget = threading.Timer(args.max_minutes * 60, interrupt) if args.max_minutes else None
        if budget:
            budget.start()
        assert process.stdout is not None  # stdout=PIPE
        for line in process.stdout:
            sys.stdout.write(line)
            log.write(line)
        code = process.wait()
        if budget:
            budget.cancel()
    seconds = time.perf_counter() - start
    stopped = "time budget" if fired.is_set() else None
    if stopped and (output / "model-best").is_dir():
        code = 0
    (output / "wall_time.json").write_text(json.dumps({
        "seconds": round(seconds, 1), "command": command,
        "machine": f"{platform.machine()} {platform.processor()}".strip(),
        "returncode": code, "stopped": stopped,
    }, indent=2))
    sys.exit(code)


if __name__ == "__main__":
    main()
