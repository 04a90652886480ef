"""Pretrain the project's biLM, or reuse the one shipped in the package.

    python scripts/pretrain.py --elmo-model shipped      # nothing to do
    python scripts/pretrain.py --elmo-model pretrained --train T --dev D [--output training/pretrain]
        [--word-table training/word_table | --word-table none] [--passes 2 | --passes 1]

`pretrained` follows the embedded model's recipe. The GloVe word table is
built first by scripts/build_word_table.py from the training text (needs
`pip install -e ".[vectors]"`; kept in --word-table for later runs). The first
pass trains the biLM with the table frozen beside the character CNN, the
table also starting the softmax's output embeddings; the second pass
(OUTPUT, from the first pass's biLM in OUTPUT-pass1) goes over the text again
with the table fine-tuned and a fresh softmax started from the table, as the
shipped model was trained. `--passes 1` stops after the first pass (in
OUTPUT); `--word-table none` trains the character CNN alone. A run already
under way, or one stopped by a signal, continues from its checkpoint; a
finished one (its model-last says so: `run_finished`) is kept.
"""
import argparse
import subprocess
import sys
from pathlib import Path
from typing import List

from spacy_elmo.pretrain.trainer import run_finished


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--elmo-model", choices=["shipped", "pretrained"], default="shipped")
    parser.add_argument("--config", default="configs/pretrain_en_2x512_128.cfg")
    parser.add_argument("--train")
    parser.add_argument("--dev")
    parser.add_argument("--output", default="training/pretrain")
    parser.add_argument("--gpu-id", type=int, default=-1)
    parser.add_argument("--word-table", default="training/word_table",
                        help="word table to build (if missing) and train with; 'none' for none (%(default)s)")
    parser.add_argument("--passes", type=int, choices=[1, 2], default=2,
                        help="passes over the text: the second fine-tunes the table (%(default)s)")
    args, extra = parser.parse_known_args()
    if args.elmo_model == "shipped":
        from spacy_elmo.resources import default_model_path

        print(f"Using the biLM shipped in the package: {default_model_path()}")
        return
    output = Path(args.output)
    # model-best is written at a run's first evaluation and model-last also when a signal stops
    # it: neither means the run has finished; model-last's "finished" does
    if run_finished(output):
        print(f"{output} has finished (its model-last says so); delete {output} to pretrain again")
        return
    common = ["--paths.train", args.train, "--paths.dev", args.dev, "--gpu-id", str(args.gpu_id)]
    table = None if args.word_table.lower() == "none" else Path(args.word_table)
    if table is not None and not (table / "table.json").exists():
        build = [sys.executable, str(Path(__file__).parent / "build_word_table.py"), str(table), "--text", args.train]
        if subprocess.call(build) != 0:
            sys.exit(f"could not build the word table in {table} (pip install -e \".[vectors]\", "
                     "or pass --word-table none)")
    first = output if args.passes == 1 else output.with_name(output.name + "-pass1")
    first_pass = common + (["--paths.word_table", str(table), "--paths.softmax_init", str(table)] if table else [])
    if not run_finished(first):
        run_pretrain(args.config, first, first_pass + extra)
    if args.passes == 1:
        return
    # the second pass starts from the first pass's biLM alone (as the shipped model started from the
    # one shipped before it, which has no softmax): its softmax is trained afresh
    start = first / "biLM"
    if not (start / "elmo.json").exists():
        _run([sys.executable, "-m", "spacy_elmo", "convert", str(first / "model-best"), str(start), "--no-softmax"])
    second_pass = common + ["--paths.init_from", str(start)]
    if table is not None:
        second_pass += ["--paths.softmax_init", str(table), "--model.word_table_trainable", "true"]
    run_pretrain(args.config, output, second_pass + extra)


def run_pretrain(config: str, output: Path, settings: List[str]) -> None:
    """`spacy_elmo pretrain CONFIG OUTPUT SETTINGS`, resuming OUTPUT's checkpoint where there is
    one; a failure exits with its code (scripts/adapt.py runs its adaptation through it too)."""
    command = [sys.executable, "-m", "spacy_elmo", "pretrain", config, str(output)] + settings
    _run(command + (["--resume"] if (output / "checkpoint.pt").exists() else []))


def _run(command: List[str]) -> None:
    code = subprocess.call(command)
    if code != 0:
        sys.exit(code)


if __name__ == "__main__":
    main()
