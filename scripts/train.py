"""Train a pipeline for the project from a config, resumably, recording the wall time and choosing the biLM.

    python scripts/train.py CONFIG OUTPUT_DIR --train T.spacy --dev D.spacy
        [--elmo-model none|shipped|pretrained] [--pretrained-dir DIR] [--max-steps N]
        [--gpu-id G] [--max-minutes M] [--resume | --overwrite[=BOOL]] [SPACY TRAIN OVERRIDES...]

`spacy train`'s steps (the config's [training] block, the same overrides on
the command line) through `spacy_elmo.resumable_training`: OUTPUT_DIR gets
model-best, model-last (with the training state), log.jsonl (every
evaluation), train.log (the console table), run_settings.json (what defines
the run) and wall_time.json.

Exit status: 0 once the run has reached its end (early stopping, the step
cap), so that `spacy project run` goes on to the next step only then.
Ctrl-C or SIGTERM end the run after its current step and save model-last
(exit 130 or 143); so does --max-minutes once that much training time is
spent (exit 3; wall_time.json says `"stopped": "time budget"`). --resume
continues such a run from OUTPUT_DIR/model-last, with its optimizer state,
step count, best score and patience, to where the uninterrupted run would
end; the config and overrides are then those model-last was saved with.

A fresh start on an OUTPUT_DIR that holds a run: an unfinished one is
refused (--resume continues it); a finished one made with the same
settings (config contents, overrides, corpora, seed, the pretrained biLM;
an override naming a file or folder, such as --paths.vectors, by contents)
is kept, and nothing is done (exit 0); one made with other settings is
refused, naming each difference. --overwrite always starts again
(--overwrite=false is as if it were not given: project.yml passes its
`overwrite` variable so).
"""
import argparse
import platform
import sys
from pathlib import Path
from typing import Any, Dict, List


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


def run_settings(args: argparse.Namespace, overrides: Dict[str, Any], seed: Any) -> Dict[str, Any]:
    """What defines a run of this script (run_settings.json): the config's contents, the overrides,
    the corpora and the pretrained biLM by contents, the seed. Not the GPU nor the time budget.

    An override naming a file or folder (`--paths.vectors training/static_vectors`) is recorded by
    contents too, so a rebuilt folder is a changed setting, not "nothing to do"; paths.train and
    paths.dev stay as given (they are the corpora, recorded by contents under train and dev)."""
    from spacy_elmo.resumable_training import overrides_by_contents, path_identity

    recorded = overrides_by_contents(overrides, skip=("paths.train", "paths.dev"))
    return {"script": "train", "config": path_identity(args.config), "overrides": recorded,
            "train": path_identity(args.train), "dev": path_identity(args.dev), "seed": seed,
            "pretrained": path_identity(args.pretrained_dir) if args.elmo_model == "pretrained" else None}


def main() -> None:
    from spacy_elmo.resumable_training import SIGNAL_EXIT, add_resume_options

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
    if args.resume and args.overwrite:
        parser.error("--resume continues the run in OUTPUT_DIR, --overwrite starts it again: pass one of them")

    from click import ClickException

    try:
        overrides = overrides_from(args, extra)
    except ClickException as err:  # an option that is neither this script's nor a --section.key override
        parser.error(f"{err.format_message()} (spaCy's config overrides are --section.key VALUE)")
    try:
        sys.exit(train(args, overrides))
    except KeyboardInterrupt:  # a second Ctrl-C, or one before training began
        print(f"{args.output}: interrupted at once; model-last (if any) is the last evaluation's: --resume "
              "continues from it", file=sys.stderr)
        sys.exit(SIGNAL_EXIT["SIGINT"])


def train(args: argparse.Namespace, overrides: Dict[str, Any]) -> int:
    """Train (or resume, or keep the finished run) into args.output; the exit status (see the docstring)."""
    import spacy
    from spacy import util
    from spacy.training.initialize import init_nlp
    from thinc.api import require_gpu

    from spacy_elmo.resumable_training import (
        MODEL_LAST, ResumeError, Tee, exit_status, finished_run_kept, read_record, recover_output,
        train_resumable, write_wall_time,
    )

    output = Path(args.output)
    recover_output(output)  # a model-last that a run killed while saving left as model-last.old
    settings = None
    if not args.resume:  # before anything is written or loaded: a refused or kept run is left as it is
        try:
            config = util.load_config(args.config, overrides=overrides, interpolate=False)
            settings = run_settings(args, overrides, config.interpolate()["training"].get("seed"))
            kept = finished_run_kept(output, settings, args.overwrite)
        except (ResumeError, OSError) as err:
            sys.exit(str(err))
        except Exception as err:  # the config or an override is invalid: spaCy's message, one line
            sys.exit(f"{args.config}: {' '.join(str(err).split())}")
        if kept is not None:
            print(kept)
            return 0
    output.mkdir(parents=True, exist_ok=True)
    if args.gpu_id >= 0:
        require_gpu(args.gpu_id)
    with open(output / "train.log", "a" if args.resume else "w", encoding="utf-8") as log:
        tee = Tee(sys.stdout, log)
        try:
            if args.resume:
                nlp = spacy.load(output / MODEL_LAST)
            else:
                nlp = init_nlp(config, use_gpu=args.gpu_id)
            state = train_resumable(nlp, output, resume=args.resume, overwrite=args.overwrite,
                                    max_minutes=args.max_minutes, use_gpu=args.gpu_id, stdout=tee,
                                    settings=settings)
        except (ResumeError, OSError) as err:
            sys.exit(f"cannot resume: {err}" if args.resume else str(err))
        code, message = exit_status(state)
        if message:
            log.write(f"{output}: {message}\n")
    record = read_record(output) if args.resume else None
    first_run: Dict[str, Any] = {"command": [sys.executable, *sys.argv], "overrides": overrides}
    if record is not None:  # where no earlier wall_time.json says so: the first session's, as recorded
        first_run = {"command": record.get("command"), "overrides": record["settings"].get("overrides")}
    elif args.resume:
        first_run = {"command": None, "overrides": None}
    write_wall_time(output, {
        "seconds": state["seconds"], "machine": f"{platform.machine()} {platform.processor()}".strip(),
        "returncode": code, "stopped": state["stopped"], "steps": state["step"], "best_step": state["best_step"],
    }, first_run, resume=args.resume)
    if message:
        print(f"{output}: {message}", file=sys.stderr)
    return code


if __name__ == "__main__":
    main()
