"""Fine-tune a trained ELMo pipeline's biLM with its task layers (a second stage).

    python scripts/finetune.py PIPELINE OUTPUT_DIR --train T.spacy --dev D.spacy
        [--learn-rate 0.0001] [--patience 1600] [--max-steps 20000] [--seed 0] [--gpu-id -1]
        [--max-minutes M] [--resume | --overwrite]

The ELMo paper keeps the biLM fixed downstream. This measures the other way,
in two stages as ULMFiT unfreezes: PIPELINE (a `model-best` trained with
`frozen = true` to its early stop) goes on training with the `elmo`
component unfrozen, so the listeners' gradients update the biLM as well as
the task layers, at a smaller learning rate, again to an early stop on dev.
Everything else (batcher, dropout, evaluation, score weights) is PIPELINE's
own [training] block, except that the elmo components leave its
frozen_components (saying so: spaCy would leave them out of every update);
OUTPUT_DIR gets model-best, model-last, log.jsonl, train.log (the console
table), run_settings.json and wall_time.json as
`scripts/train.py` writes them. Training goes through
`spacy_elmo.resumable_training`: Ctrl-C, SIGTERM or --max-minutes end it
after the current step with model-last saved (exit 130, 143 or 3: not
finished), and --resume continues it from there (PIPELINE and the other
settings are then model-last's own: arguments that differ from the run's
record are ignored, and a line says so; a run whose PIPELINE or corpora
changed since it started is refused, naming the difference); 0 once it
has reached its end. A fresh
start keeps a finished run made with the same settings (PIPELINE's and the
corpora's contents, learning rate, patience, step cap, seed) and refuses
one made with others, or an unfinished one, unless --overwrite. A
PIPELINE from a run that has not finished (stopped, or still running) is
refused unless --allow-unfinished (spacy_elmo.source_runs).
"""
import argparse
import math
import platform
import sys
from pathlib import Path
from typing import Any, Dict, Optional


def main() -> None:
    from spacy_elmo.resumable_training import SIGNAL_EXIT, add_resume_options
    from spacy_elmo.source_runs import add_allow_unfinished_option

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipeline", help="a trained ELMo pipeline (model-best of a frozen run)")
    parser.add_argument("output", help="the folder the run is written to")
    parser.add_argument("--train", required=True, help="training corpus (.spacy)")
    parser.add_argument("--dev", required=True, help="dev corpus (.spacy): early stopping")
    parser.add_argument("--learn-rate", type=float, default=1e-4,
                        help="learning rate of the biLM and the task layers alike (%(default)s)")
    parser.add_argument("--patience", type=int, default=1600,
                        help="steps without a better dev score before the run stops (%(default)s)")
    parser.add_argument("--max-steps", type=int, default=20000, help="the step cap (%(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="random seed: batch order, dropout (%(default)s)")
    parser.add_argument("--gpu-id", type=int, default=-1, help="GPU to train on (-1: CPU)")
    add_resume_options(parser)
    add_allow_unfinished_option(parser)
    args = parser.parse_args()
    if args.resume and args.overwrite:
        parser.error("--resume continues the run in OUTPUT_DIR, --overwrite starts it again: pass one of them")
    if not (math.isfinite(args.learn_rate) and args.learn_rate > 0):  # -1 trained by gradient ascent
        parser.error(f"--learn-rate must be a number above 0, got {args.learn_rate}")
    try:
        sys.exit(finetune(args))
    except KeyboardInterrupt:  # a second Ctrl-C, or one before training began
        print(f"{args.output}: interrupted at once; model-last (if any) is the last evaluation's: --resume "
              "continues from it", file=sys.stderr)
        sys.exit(SIGNAL_EXIT["SIGINT"])


def run_settings(args: argparse.Namespace) -> Dict[str, Any]:
    """What defines a fine-tuning run (run_settings.json): the pipeline and corpora by contents, and the
    settings this script changes in its [training] block. Not the GPU nor the time budget."""
    from spacy_elmo.resumable_training import path_identity

    return {"script": "finetune", "pipeline": path_identity(args.pipeline), "train": path_identity(args.train),
            "dev": path_identity(args.dev), "learn_rate": args.learn_rate, "patience": args.patience,
            "max_steps": args.max_steps, "seed": args.seed}


def finetune(args: argparse.Namespace) -> int:
    """Fine-tune (or resume, or keep the finished run) into args.output; the exit status (see the docstring)."""
    from spacy_elmo.resumable_training import lock_output_or_exit, output_folder_problem

    output = Path(args.output)
    problem = output_folder_problem(output)  # before the pipeline is loaded (mkdir's traceback came after)
    if problem:
        sys.exit(problem)
    with lock_output_or_exit(output):  # one run at a time on OUTPUT, from here to the exit
        return _finetune_locked(args, output)


def _finetune_locked(args: argparse.Namespace, output: Path) -> int:
    import spacy
    from thinc.api import fix_random_seed

    from spacy_elmo.resumable_training import (
        MODEL_LAST, ResumeError, Tee, TrainingSettingsError, check_training, corpus_problem, exit_status,
        finished_run_kept, open_run_log, recover_output, resume_record_or_exit, train_resumable, use_gpu_or_exit,
    )
    from spacy_elmo.source_runs import unfinished_source_problem

    recover_output(output)  # a model-last that a run killed while saving left as model-last.old
    settings, record = None, None
    if args.resume:
        record = resume_record_or_exit(output, lambda: run_settings(args))
    else:  # before anything is written or loaded: a refused or kept run is left as it is
        if not Path(args.pipeline).is_dir():
            sys.exit(f"{args.pipeline}: no such pipeline directory (the model-best of a frozen ELMo run)")
        problem = corpus_problem("--train", args.train) or corpus_problem("--dev", args.dev)
        if not problem and not args.allow_unfinished:
            problem = unfinished_source_problem(args.pipeline, "PIPELINE")
        if problem:
            sys.exit(problem)
        settings = run_settings(args)
        try:
            kept = finished_run_kept(output, settings, args.overwrite)
        except (ResumeError, OSError) as err:
            sys.exit(str(err))
        if kept is not None:
            print(kept)
            return 0
    use_gpu_or_exit(args.gpu_id)
    fix_random_seed(args.seed)
    source = output / MODEL_LAST if args.resume else Path(args.pipeline)
    try:
        nlp = spacy.load(source)
    except (OSError, ValueError) as err:  # spaCy's E050, msgpack's errors and kin: their message, one line
        sys.exit(f"{'cannot resume: ' if args.resume else ''}{source}: cannot load the pipeline "
                 f"({' '.join(str(err).split())}){'; start afresh with --overwrite' if args.resume else ''}")
    if not args.resume:
        prepare(nlp, args)
        try:  # --max-steps -1 and kin, before anything is written
            check_training(nlp.config.interpolate()["training"], args.max_minutes)
        except TrainingSettingsError as err:
            sys.exit(str(err))
    with open_run_log(output, args.resume) as log:
        try:
            state = train_resumable(nlp, output, resume=args.resume, overwrite=args.overwrite,
                                    max_minutes=args.max_minutes, use_gpu=args.gpu_id, stdout=Tee(sys.stdout, log),
                                    settings=settings, resume_checked=args.resume)
        except (ResumeError, TrainingSettingsError, OSError) as err:
            # "cannot resume" only where the resume was refused, not for a failure hours into training
            sys.exit(f"cannot resume: {err}" if args.resume and isinstance(err, ResumeError) else str(err))
        code, message = exit_status(state)
        if message:
            log.write(f"{output}: {message}\n")
    write_wall_time(output, state, args, nlp.config["training"]["optimizer"]["learn_rate"], code, record)
    if message:
        print(f"{output}: {message}", file=sys.stderr)
    return code


def prepare(nlp, args: argparse.Namespace) -> None:
    """Unfreeze the pipeline's elmo components and set the second stage's corpora and [training] settings."""
    names = [name for name in nlp.pipe_names if nlp.get_pipe_meta(name).factory == "elmo"]
    if not names:
        sys.exit(f"{args.pipeline}: the pipeline has no 'elmo' component to fine-tune ({nlp.pipe_names})")
    config = nlp.config
    for name in names:
        elmo: Any = nlp.get_pipe(name)  # spacy_elmo's Elmo component
        elmo.frozen = False  # the biLM now runs with autograd and without its caches
        nlp.get_pipe_config(name)["frozen"] = False  # what the saved pipelines will say
    config["paths"]["train"], config["paths"]["dev"] = args.train, args.dev
    training = config["training"]
    # spaCy excludes frozen components from every update: left there, the biLM would stay as it was
    frozen = [name for name in training.get("frozen_components", []) if name in names]
    if frozen:
        training["frozen_components"] = [name for name in training["frozen_components"] if name not in names]
        print(f"[training] frozen_components: {frozen} removed (this stage fine-tunes them)", file=sys.stderr)
    training["optimizer"]["learn_rate"] = args.learn_rate
    training["patience"], training["max_steps"], training["seed"] = args.patience, args.max_steps, args.seed
    # the console table only: train_resumable writes log.jsonl itself
    training["logger"] = {"@loggers": "spacy.ConsoleLogger.v3", "progress_bar": None}


def write_wall_time(output: Path, state: Dict[str, Any], args: argparse.Namespace, learn_rate: float,
                    code: int, record: Optional[Dict[str, Any]] = None) -> None:
    """wall_time.json: training seconds (resumed sessions included), why it stopped, the exit status, and
    the run as first started (its command line, the pipeline it started from; each resume's command listed).
    On --resume, `record` is the run's run_settings.json as read before training (None: there is none)."""
    from spacy_elmo.resumable_training import write_wall_time as write

    first_run: Dict[str, Any] = {"command": [sys.executable, *sys.argv], "from": args.pipeline}
    if args.resume:  # where no earlier wall_time.json says so: the first session's, as recorded
        settings = record["settings"] if record else {}
        first_run = {"command": record.get("command") if record else None,
                     "from": (settings.get("pipeline") or {}).get("path")}
    write(output, {
        "seconds": state["seconds"], "minutes": round(state["seconds"] / 60, 1), "machine": platform.machine(),
        "learn_rate": learn_rate, "stopped": state["stopped"], "returncode": code,
        "steps": state["step"], "best_step": state["best_step"],
    }, first_run, resume=args.resume)


if __name__ == "__main__":
    main()
