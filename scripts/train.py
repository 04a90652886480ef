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
end; the config and overrides are then those model-last was saved with
(arguments that differ from the run's record are ignored, and a line says
so), and it is refused, naming the difference, where a file or folder the
run recorded by contents (a corpus, the config, the biLM) has changed since
it started: continuing would mix two runs.

A fresh start on an OUTPUT_DIR that holds a run: an unfinished one is
refused (--resume continues it); a finished one made with the same
settings (config contents, overrides, corpora, seed, the pretrained biLM;
an override naming a file or folder, such as --paths.vectors, by contents)
is kept, and nothing is done (exit 0); one made with other settings is
refused, naming each difference. --overwrite always starts again
(--overwrite=false is as if it were not given: project.yml passes its
`overwrite` variable so).

A --pretrained-dir that is the model-best of a pretraining or adaptation
that has not finished is refused (spacy_elmo.source_runs), unless
--allow-unfinished.
"""
import argparse
import platform
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple


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
    from spacy_elmo.resumable_training import SIGNAL_EXIT, add_resume_options, corpus_problem
    from spacy_elmo.source_runs import add_allow_unfinished_option, unfinished_source_problem

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", help="the training config (.cfg)")
    parser.add_argument("output", help="the folder the run is written to")
    parser.add_argument("--train", required=True, help="training corpus (.spacy): paths.train")
    parser.add_argument("--dev", required=True, help="dev corpus (.spacy): paths.dev")
    parser.add_argument("--elmo-model", choices=["shipped", "pretrained", "none"], default="none",
                        help="none or shipped: the config's own biLM loader; pretrained: --pretrained-dir's model "
                        "(%(default)s)")
    parser.add_argument("--pretrained-dir", default="training/pretrain/model-best",
                        help="the biLM --elmo-model pretrained reads (%(default)s)")
    parser.add_argument("--max-steps", type=int, default=0, help="cap the run at N steps (0: the config's)")
    parser.add_argument("--gpu-id", type=int, default=-1, help="GPU to train on (-1: CPU)")
    add_resume_options(parser)
    add_allow_unfinished_option(parser)
    args, extra = parser.parse_known_args()
    if args.resume and args.overwrite:
        parser.error("--resume continues the run in OUTPUT_DIR, --overwrite starts it again: pass one of them")

    from click import ClickException

    try:
        overrides = overrides_from(args, extra)
    except ClickException as err:  # an option that is neither this script's nor a --section.key override
        parser.error(f"{err.format_message()} (spaCy's config overrides are --section.key VALUE)")
    # after the options (a mistyped one is named first); a resumed run reads its own record's corpora and
    # biLM, checked there
    if not args.resume:
        problem = corpus_problem("--train", args.train) or corpus_problem("--dev", args.dev)
        if args.elmo_model == "pretrained" and not problem and not Path(args.pretrained_dir).exists():
            problem = (f"--pretrained-dir {args.pretrained_dir}: no such model (pretrain one first: the project's "
                       "`pretrain` step, or scripts/pretrain.py; or pass the folder of one)")
        if args.elmo_model == "pretrained" and not problem and not args.allow_unfinished:
            problem = unfinished_source_problem(args.pretrained_dir, "--pretrained-dir")
        if problem:
            sys.exit(problem)
    try:
        sys.exit(train(args, overrides))
    except KeyboardInterrupt:  # a second Ctrl-C, or one before training began
        print(f"{args.output}: interrupted at once; model-last (if any) is the last evaluation's: --resume "
              "continues from it", file=sys.stderr)
        sys.exit(SIGNAL_EXIT["SIGINT"])


def train(args: argparse.Namespace, overrides: Dict[str, Any]) -> int:
    """Train (or resume, or keep the finished run) into args.output; the exit status (see the docstring).

    Whatever can be checked is checked before anything is written: the output folder, the config
    and its [training] values, the pipeline's initialization (a fresh start), or the run's record,
    state and pipeline (--resume)."""
    from spacy_elmo.resumable_training import lock_output_or_exit, output_folder_problem

    output = Path(args.output)
    problem = output_folder_problem(output)
    if problem:
        sys.exit(problem)
    with lock_output_or_exit(output):  # one run at a time on OUTPUT, from here to the exit
        return _train_locked(args, overrides, output)


def _train_locked(args: argparse.Namespace, overrides: Dict[str, Any], output: Path) -> int:
    from spacy_elmo.resumable_training import (
        ResumeError, Tee, TrainingSettingsError, exit_status, open_run_log, recover_output, resume_record_or_exit,
        train_resumable, write_wall_time,
    )

    recover_output(output)  # a model-last that a run killed while saving left as model-last.old
    settings, record = None, None
    if args.resume:
        record = resume_record_or_exit(output, lambda: given_settings(args, overrides))
        nlp = load_run(output)
    else:  # before anything is written or loaded: a refused or kept run is left as it is
        settings, config, kept = fresh_settings(args, overrides, output)
        if kept is not None:
            print(kept)
            return 0
        nlp = init_pipeline(args, config)
    with open_run_log(output, args.resume) as log:
        tee = Tee(sys.stdout, log)
        try:
            state = train_resumable(nlp, output, resume=args.resume, overwrite=args.overwrite,
                                    max_minutes=args.max_minutes, use_gpu=args.gpu_id, stdout=tee,
                                    settings=settings, resume_checked=args.resume)
        except (ResumeError, TrainingSettingsError, OSError) as err:
            # "cannot resume" only where the resume was refused, not for a failure hours into training
            sys.exit(f"cannot resume: {err}" if args.resume and isinstance(err, ResumeError) else str(err))
        code, message = exit_status(state)
        if message:
            log.write(f"{output}: {message}\n")
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


def fresh_settings(args: argparse.Namespace, overrides: Dict[str, Any], output: Path) -> Tuple[Any, Any, Any]:
    """A fresh start's (settings, config, kept): the run's settings, its config with the overrides, and
    the line saying OUTPUT already holds this run, finished (None: train). An invalid config or
    override, or a run there that may not be replaced, exits with one line."""
    from spacy import util

    from spacy_elmo.resumable_training import ResumeError, finished_run_kept

    try:
        config = util.load_config(args.config, overrides=overrides, interpolate=False)
        settings = run_settings(args, overrides, config.interpolate()["training"].get("seed"))
        kept = finished_run_kept(output, settings, args.overwrite)
    except (ResumeError, OSError) as err:
        sys.exit(str(err))
    except Exception as err:  # the config or an override is invalid: spaCy's message, one line
        sys.exit(f"{args.config}: {error_line(err)}")
    return settings, config, kept


def error_line(err: Exception) -> str:
    """spaCy's error as one line: a config validation error as each setting and what is wrong with it
    (not the whole resolved block it goes on to print)."""
    from confection import ConfigValidationError

    if isinstance(err, ConfigValidationError) and err.errors:
        parent = f"{err.parent}." if err.parent else ""
        return "config validation error: " + "; ".join(
            f"{parent}{'.'.join(map(str, error.get('loc', [])))}: {error.get('msg')}" for error in err.errors)
    return " ".join(str(err).split())


def init_pipeline(args: argparse.Namespace, config: Any) -> Any:
    """The pipeline a fresh start trains, initialized from `config`, with its [training] values checked,
    before the output is written: an override of the wrong type (`--training.max_steps abc`), a corpus
    with no examples (spaCy's E923), eval_frequency 0 or max_epochs -1 exit with one line (they were a
    traceback, the last two after run_settings.json had been written)."""
    from spacy.training.initialize import init_nlp

    from spacy_elmo.resumable_training import TrainingSettingsError, check_training, use_gpu_or_exit

    use_gpu_or_exit(args.gpu_id)
    try:
        nlp = init_nlp(config, use_gpu=args.gpu_id)
        check_training(nlp.config.interpolate()["training"], args.max_minutes)
    except TrainingSettingsError as err:
        sys.exit(f"{args.config}: {err}")
    except (ValueError, AssertionError, OSError) as err:  # spaCy's config validation, E923 and kin
        sys.exit(f"{args.config}: cannot initialize the pipeline ({error_line(err)})")
    return nlp


SCRIPT_OVERRIDES = ("paths.train", "paths.dev", "training.logger", "initialize.components.elmo.loader")
"""The overrides this script sets itself (from --train, --dev, --elmo-model): not the caller's own."""


def given_settings(args: argparse.Namespace, overrides: Dict[str, Any]) -> Dict[str, Any]:
    """The settings a resuming command gives, as run_settings.json records them: the config and the
    corpora, the biLM where --elmo-model pretrained is given, and the overrides on its command line.
    Those it leaves out (the documented resume command names no override) are not compared."""
    from spacy_elmo.resumable_training import overrides_by_contents, path_identity

    given: Dict[str, Any] = {"config": path_identity(args.config), "train": path_identity(args.train),
                             "dev": path_identity(args.dev)}
    if args.elmo_model == "pretrained":
        given["pretrained"] = path_identity(args.pretrained_dir)
    own = {key: value for key, value in overrides.items() if key not in SCRIPT_OVERRIDES}
    given["overrides"] = overrides_by_contents(own)
    return given


def load_run(output: Path) -> Any:
    """OUTPUT/model-last, the pipeline --resume goes on from: one line naming it where it cannot be loaded
    (a damaged component file was msgpack's ValueError as a traceback)."""
    import spacy

    from spacy_elmo.resumable_training import MODEL_LAST

    if not (output / MODEL_LAST).exists():
        sys.exit(f"cannot resume: {output / MODEL_LAST}: no such pipeline (no run there to resume); start afresh "
                 "without --resume")
    try:
        return spacy.load(output / MODEL_LAST)
    except (OSError, ValueError) as err:  # spaCy's E050, msgpack's errors: their message, one line
        sys.exit(f"cannot resume: {output / MODEL_LAST}: cannot load the pipeline ({' '.join(str(err).split())}); "
                 "start afresh with --overwrite")


if __name__ == "__main__":
    main()
