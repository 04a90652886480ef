"""Adapt the project's biLM to a task's text before the downstream runs read it.

    python scripts/adapt.py --elmo-model shipped|pretrained --train T.spacy --dev D.spacy
        [--output training/adapted_ewt] [--pretrained-dir training/pretrain/model-best]
        [--config configs/pretrain_adapt_ewt.cfg] [PRETRAIN OVERRIDES...]

The ELMo paper's domain transfer (section 3.4, supplement A.1): the pretrained
biLM goes on training as a language model on the task's own training text,
without its labels, and the dev text picks the checkpoint by perplexity; the
downstream components then read the adapted biLM, frozen as before. The word
table stays frozen, so the baseline with the biLM's table as static vectors
stays the fair one. `shipped` starts from the package's embedded biLM (a new
softmax, started from its own word table, trains alone first);
`pretrained` from the project's `pretrain` output, which brings its softmax.
The adapted model is OUTPUT/model-best. A run already under way, or one
stopped by a signal, continues from its checkpoint; a finished one (its
model-last says so: `run_finished`) is kept.
"""
import argparse
from pathlib import Path

from pretrain import run_pretrain  # scripts/pretrain.py, beside this script

from spacy_elmo.pretrain.trainer import run_finished


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--elmo-model", choices=["shipped", "pretrained"], default="shipped")
    parser.add_argument("--train", required=True, help="the task's training text (.spacy, .txt or .txt.gz)")
    parser.add_argument("--dev", required=True, help="held-out text of the task that picks the checkpoint")
    parser.add_argument("--output", default="training/adapted_ewt")
    parser.add_argument("--pretrained-dir", default="training/pretrain/model-best",
                        help="the biLM to adapt with --elmo-model pretrained (%(default)s)")
    parser.add_argument("--config", default="configs/pretrain_adapt_ewt.cfg")
    parser.add_argument("--gpu-id", type=int, default=-1)
    args, extra = parser.parse_known_args()
    output = Path(args.output)
    # not model-last's existence: a run stopped by SIGINT/SIGTERM writes one too, and must go on
    if run_finished(output):
        print(f"{output} has finished (its model-last says so); delete {output} to adapt again")
        return
    settings = ["--paths.train", args.train, "--paths.dev", args.dev, "--gpu-id", str(args.gpu_id)]
    if args.elmo_model == "pretrained":
        # that model brings its own softmax (and vocabulary): nothing to start one from
        settings += ["--paths.init_from", args.pretrained_dir, "--paths.softmax_init", "null"]
    run_pretrain(args.config, output, settings + extra)


if __name__ == "__main__":
    main()
