"""Adapt the project's biLM to a task's text before the downstream runs read it.

    python scripts/adapt.py --elmo-model shipped|pretrained --train T.spacy --dev D.spacy
        [--output training/adapted_ewt] [--pretrained-dir training/pretrain/model-best]
        [--config configs/pretrain_adapt_ewt.cfg] [--overwrite[=BOOL]] [PRETRAIN OVERRIDES...]

The ELMo paper's domain transfer (section 3.4, supplement A.1): the pretrained
biLM goes on training as a language model on the task's own training text,
without its labels, and the dev text picks the checkpoint by perplexity; the
downstream components then read the adapted biLM, frozen as before. The word
table stays frozen, so the baseline with the biLM's table as static vectors
stays the fair one. `shipped` starts from the package's embedded biLM (a new
softmax, started from its own word table, trains alone first);
`pretrained` from the project's `pretrain` output, which brings its softmax.
The adapted model is OUTPUT/model-best. A run already under way, or one
stopped by a signal, continues from its checkpoint when it was started with
the same settings, and is refused, naming each difference, when not (it
would mix two adaptations). A finished one (its
model-last says so: `run_finished`) is kept when it was made with the same
settings (OUTPUT/run_settings.json: the config's, the texts' and the
starting biLM's contents, --elmo-model, the overrides), and refused,
naming each difference, when not: the project never reads a biLM adapted
from other inputs than its command says. --overwrite starts it again
(--overwrite=false is as if it were not given: project.yml passes its
`overwrite` variable so). A --pretrained-dir from a pretraining that has
not finished is refused unless --allow-unfinished.
"""
import argparse
import shutil
import sys
from pathlib import Path
from typing import Any, Dict, List

from pretrain import override_settings, run_pretrain  # scripts/pretrain.py, beside this script

from spacy_elmo.pretrain.trainer import run_finished
from spacy_elmo.resumable_training import (
    ResumeError, add_overwrite_option, check_unfinished, keep_finished, lock_output_or_exit, overrides_by_contents,
    path_identity, record_settings,
)
from spacy_elmo.source_runs import add_allow_unfinished_option, unfinished_source_problem


def run_settings(args: argparse.Namespace, extra: List[str]) -> Dict[str, Any]:
    """What defines an adaptation (run_settings.json): the config, texts and starting biLM by contents,
    and the pretraining overrides (one naming a file or folder by contents). Not the GPU."""
    overrides = override_settings(extra)
    return {"script": "adapt", "config": path_identity(args.config), "train": path_identity(args.train),
            "dev": path_identity(args.dev), "elmo_model": args.elmo_model,
            "pretrained": path_identity(args.pretrained_dir) if args.elmo_model == "pretrained" else None,
            "overrides": overrides_by_contents(overrides) if isinstance(overrides, dict) else overrides}


def check_inputs(parser: argparse.ArgumentParser, args: argparse.Namespace, extra: List[str]) -> None:
    """Exit through `parser.error` (one line, status 2) where the overrides do not parse or name no setting,
    the config does not load with them, or the texts, the config or the starting biLM are missing."""
    from spacy_elmo.pretrain.settings import SettingsError, load_config, parse_overrides
    from spacy_elmo.pretrain.text_corpus import expand_paths

    try:
        load_config(args.config, parse_overrides(extra))
    except SettingsError as err:
        parser.error(f"{args.config} with the overrides {extra}: {err}")
    for option, text in (("--train", args.train), ("--dev", args.dev)):
        try:
            expand_paths(text)
        except FileNotFoundError as err:
            parser.error(f"{option}: {err}")
    if args.elmo_model == "pretrained" and not Path(args.pretrained_dir).exists():
        parser.error(f"--pretrained-dir {args.pretrained_dir}: no such model (pretrain one first: the project's "
                     "`pretrain` step, or scripts/pretrain.py)")
    unfinished = None
    if args.elmo_model == "pretrained" and not args.allow_unfinished:
        unfinished = unfinished_source_problem(args.pretrained_dir, "--pretrained-dir")
    if unfinished:
        parser.error(unfinished)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--elmo-model", choices=["shipped", "pretrained"], default="shipped",
                        help="shipped: start from the embedded biLM; pretrained: from --pretrained-dir (%(default)s)")
    parser.add_argument("--train", required=True, help="the task's training text (.spacy, .txt or .txt.gz)")
    parser.add_argument("--dev", required=True, help="held-out text of the task that picks the checkpoint")
    parser.add_argument("--output", default="training/adapted_ewt",
                        help="the run's folder; the adapted model is OUTPUT/model-best (%(default)s)")
    parser.add_argument("--pretrained-dir", default="training/pretrain/model-best",
                        help="the biLM to adapt with --elmo-model pretrained (%(default)s)")
    parser.add_argument("--config", default="configs/pretrain_adapt_ewt.cfg",
                        help="the adaptation's pretraining config (%(default)s)")
    parser.add_argument("--gpu-id", type=int, default=-1, help="GPU to train on (-1: CPU)")
    add_overwrite_option(parser, "start again, deleting what OUTPUT holds")
    add_allow_unfinished_option(parser)
    args, extra = parser.parse_known_args()
    output = Path(args.output)
    check_inputs(parser, args, extra)  # before --overwrite deletes anything: a typo must not cost the run
    defining = run_settings(args, extra)
    with lock_output_or_exit(output):  # one adaptation at a time on OUTPUT: --overwrite never deletes a live run
        adapt(args, extra, output, defining)


def adapt(args: argparse.Namespace, extra: List[str], output: Path, defining: Dict[str, Any]) -> None:
    """Keep the finished adaptation in OUTPUT, or start or continue it (the lock on OUTPUT held)."""
    if args.overwrite and output.exists():
        with lock_output_or_exit(output, "pretrain"):  # a live `pretrain` run there: refused, not deleted
            shutil.rmtree(output)
    # not model-last's existence: a run stopped by SIGINT/SIGTERM writes one too, and must go on
    if run_finished(output):
        try:
            print(keep_finished(output, defining, "adaptation"))
        except ResumeError as err:
            sys.exit(str(err))
        return
    if (output / "checkpoint.pt").exists():
        # a run under way or stopped: continued only with the settings it started with, else it would
        # mix two adaptations, and the next command would refuse its own output as made with others
        try:
            check_unfinished(output, defining, "adaptation")
        except ResumeError as err:
            sys.exit(str(err))
    else:
        record_settings(output, defining)  # a fresh run (a resumed one keeps the settings it started with)
    settings = ["--paths.train", args.train, "--paths.dev", args.dev, "--gpu-id", str(args.gpu_id)]
    if args.elmo_model == "pretrained":
        # that model brings its own softmax (and vocabulary): nothing to start one from
        settings += ["--paths.init_from", args.pretrained_dir, "--paths.softmax_init", "null"]
    run_pretrain(args.config, output, settings + extra)


if __name__ == "__main__":
    main()
