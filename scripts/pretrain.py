"""Pretrain the project's biLM, or reuse the one shipped in the package.

    python scripts/pretrain.py --elmo-model shipped      # nothing to do
    python scripts/pretrain.py --elmo-model pretrained --train T --dev D [--output training/pretrain]

A run already in OUTPUT continues from its checkpoint.
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
    args, extra = parser.parse_known_args()
    if args.elmo_model == "shipped":
        from spacy_elmo.resources import default_model_path

        print(f"Using the biLM shipped in the package: {default_model_path()}")
        return
    output = Path(args.output)
    command = [sys.executable, "-m", "spacy_elmo", "pretrain", args.config, str(output),
               "--paths.train", args.train, "--paths.dev", args.dev, "--gpu-id", str(args.gpu_id)] + extra
    if (output / "checkpoint.pt").exists() and not (output / "model-best").exists():
        command.append("--resume")
    elif (output / "model-best").exists():
        print(f"{output / 'model-best'} exists; delete {output} to pretrain again")
        return
    sys.exit(subprocess.call(command))


if __name__ == "__main__":
    main()
