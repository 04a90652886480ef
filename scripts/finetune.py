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
own [training] block; OUTPUT_DIR gets model-best, model-last, log.jsonl and
wall_time.json as `scripts/train.py` writes them. Training goes through
`spacy_elmo.resumable_training`: Ctrl-C, SIGTERM or --max-minutes end it
after the current step with model-last saved, and --resume continues it from
there (PIPELINE and the other settings are then model-last's own).
"""
import argparse
import json
import platform
import sys
from pathlib import Path
from typing import Any, Dict


def main() -> None:
    from spacy_elmo.resumable_training import add_resume_options

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipeline", help="a trained ELMo pipeline (model-best of a frozen run)")
    parser.add_argument("output")
    parser.add_argument("--train", required=True)
    parser.add_argument("--dev", required=True)
    parser.add_argument("--learn-rate", type=float, default=1e-4)
    parser.add_argument("--patience", type=int, default=1600)
    parser.add_argument("--max-steps", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gpu-id", type=int, default=-1)
    add_resume_options(parser)
    args = parser.parse_args()

    import spacy
    from thinc.api import fix_random_seed, require_gpu

    from spacy_elmo.resumable_training import MODEL_LAST, ResumeError, train_resumable

    if args.gpu_id >= 0:
        require_gpu(args.gpu_id)
    fix_random_seed(args.seed)
    output = Path(args.output)
    if args.resume:
        try:
            nlp = spacy.load(output / MODEL_LAST)
            state = train_resumable(nlp, output, resume=True, max_minutes=args.max_minutes, use_gpu=args.gpu_id)
        except (ResumeError, OSError) as err:
            sys.exit(f"cannot resume: {err}")
        write_wall_time(output, state, args, nlp.config["training"]["optimizer"]["learn_rate"])
        return
    nlp = spacy.load(args.pipeline)
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
    training["optimizer"]["learn_rate"] = args.learn_rate
    training["patience"], training["max_steps"], training["seed"] = args.patience, args.max_steps, args.seed
    # the console table only: train_resumable writes log.jsonl itself
    training["logger"] = {"@loggers": "spacy.ConsoleLogger.v3", "progress_bar": None}
    try:
        state = train_resumable(nlp, output, overwrite=args.overwrite, max_minutes=args.max_minutes,
                                use_gpu=args.gpu_id)
    except ResumeError as err:
        sys.exit(str(err))
    write_wall_time(output, state, args, nlp.config["training"]["optimizer"]["learn_rate"])


def write_wall_time(output: Path, state: Dict[str, Any], args: argparse.Namespace, learn_rate: float) -> None:
    """wall_time.json: training seconds (resumed sessions included), why it stopped, where it started."""
    first = output / "wall_time.json"
    origin = json.loads(first.read_text()).get("from") if args.resume and first.is_file() else args.pipeline
    first.write_text(json.dumps({
        "seconds": state["seconds"], "minutes": round(state["seconds"] / 60, 1), "machine": platform.machine(),
        "from": origin, "learn_rate": learn_rate, "stopped": state["stopped"],
        "steps": state["step"], "best_step": state["best_step"],
    }, indent=2))


if __name__ == "__main__":
    main()
