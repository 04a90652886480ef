"""Train a pipeline for the project from a config, resumably, recording the wall time and choosing the biLM.

    python scripts/train.py CONFIG OUTPUT_DIR --train T.spacy --dev D.spacy
        [--elmo-model shipped|pretrained] [--pretrained-dir DIR] [--max-steps N]
        [--gpu-id G] [--max-minutes M] [--resume | --overwrite] [SPACY TRAIN OVERRIDES...]

`spacy train`'s steps (the config's [training] block, the same overrides on
the command line) through `spacy_elmo.resumable_training`: OUTPUT_DIR gets
model-best, model-last (with the training state), log.jsonl (every
evaluation), train.log (the console table) and wall_time.json. Ctrl-C or
SIGTERM ends the run after its current step and saves model-last; so does
--max-minutes once that much training time is spent (the exit code is then
0 and wall_time.json says `"stopped": "time budget"`). --resume continues
such a run from OUTPUT_DIR/model-last, with its optimizer state, step
count, best score and patience, to where the uninterrupted run would end;
the config and overrides are then those model-last was saved with. A fresh
start refuses an OUTPUT_DIR that holds an unfinished run, unless --overwrite.
"""
import argparse
import json
import platform
import sys
from pathlib import Path
from typing import IO, List


class Tee:
    """Write to the console and to a log file."""

    def __init__(self, *streams: IO) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
            stream.flush()
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


def overrides_from(args: argparse.Namespace, extra: List[str]) -> dict:
    """The config overrides: the corpora, the biLM's loader, the step cap and the caller's own."""
    from spacy.cli._util import parse_config_overrides

    overrides = {"paths.train": args.train, "paths.dev": args.dev,
                 "training.logger": {"@loggers": "spacy.ConsoleLogger.v3", "progress_bar": None}}
    if args.elmo_model == "pretrained":
        # the config's loader (the embedded biLM) replaced by the pretrained model's directory
        overrides["initialize.components.elmo.loader"] = {"@model_loaders": "spacy-elmo.NativeLoader.v1",
                                                          "path": args.pretrained_dir}
    if args.max_steps:
        overrides["training.max_steps"] = args.max_steps
    overrides.update(parse_config_overrides(extra))
    return overrides


def main() -> None:
    from spacy_elmo.resumable_training import add_resume_options

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config")
    parser.add_argument("output")
    parser.add_argument("--train", required=True)
    parser.add_argument("--dev", required=True)
    parser.add_argument("--elmo-model", choices=["shipped", "pretrained", "none"], default="none")
    parser.add_argument("--pretrained-dir", default="training/pretrain/model-best")
    parser.add_argument("--max-steps", type=int, default=0)
    parser.add_argument("--gpu-id", type=int, default=-1)
    add_resume_options(parser)
    args, extra = parser.parse_known_args()

    import spacy
    from spacy import util
    from spacy.training.initialize import init_nlp
    from thinc.api import require_gpu

    from spacy_elmo.resumable_training import MODEL_LAST, ResumeError, train_resumable

    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    if args.gpu_id >= 0:
        require_gpu(args.gpu_id)
    overrides = overrides_from(args, extra)
    with open(output / "train.log", "a" if args.resume else "w", encoding="utf-8") as log:
        tee = Tee(sys.stdout, log)
        try:
            if args.resume:
                nlp = spacy.load(output / MODEL_LAST)
            else:
                config = util.load_config(args.config, overrides=overrides, interpolate=False)
                nlp = init_nlp(config, use_gpu=args.gpu_id)
            state = train_resumable(nlp, output, resume=args.resume, overwrite=args.overwrite,
                                    max_minutes=args.max_minutes, use_gpu=args.gpu_id, stdout=tee)
        except (ResumeError, OSError) as err:
            sys.exit(f"cannot resume: {err}" if args.resume else str(err))
    (output / "wall_time.json").write_text(json.dumps({
        "seconds": state["seconds"], "command": [sys.executable, *sys.argv],
        "machine": f"{platform.machine()} {platform.processor()}".strip(),
        "returncode": 0, "stopped": state["stopped"], "steps": state["step"], "best_step": state["best_step"],
        "overrides": overrides if not args.resume else None,
    }, indent=2))


if __name__ == "__main__":
    main()
