"""Write a trained native biLM widened to a larger `projection_dim`, as a start for `pretrain --init-from`.

    python scripts/widen_bilm.py embedded runs/en_t3_p256 --projection-dim 256
    python -m spacy_elmo pretrain configs/pretrain_en_2x512_128.cfg runs/wide \\
        --init-from runs/en_t3_p256 --paths.softmax_init runs/glove_table ...

The widened model computes what the trained one does: per direction its
first dimensions are the old ones and the new ones are zero until trained
(spacy_elmo/bilm/widen.py). A softmax, where the model has one, is widened
to score as before. `pretrain --init-from` takes the architecture from the
model, so the run's config needs no [model] change. What a wider
projection costs: about twice the LSTMs' products at 128 -> 256
(benchmarks/RESULTS.md, issue 21).
"""
import argparse
import math
import sys
from pathlib import Path
from typing import List, Optional

from wasabi import msg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spacy_elmo.bilm.widen import widen_projection, widen_softmax  # noqa: E402
from spacy_elmo.io.errors import WeightsError  # noqa: E402
from spacy_elmo.io.native import is_native, load_native, save_native  # noqa: E402
from spacy_elmo.pretrain.init_from import model_path  # noqa: E402


def check_scale(scale: float) -> None:
    """Exit with one line unless --scale is a finite number >= 0, before the model is loaded: a
    negative one was torch's "uniform_ expects from <= to" traceback after loading, nan another."""
    if not math.isfinite(scale) or scale < 0:
        msg.fail(f"--scale must be a finite number >= 0, got {scale}", exits=1)


def check_output(output: Path) -> None:
    """Exit with one line if the widened model cannot be written to `output`, before the model is
    loaded and widened: save_native's NotADirectoryError or FileNotFoundError came only after that."""
    if output.exists() and not output.is_dir():  # iterdir() would raise NotADirectoryError
        msg.fail(f"{output}: exists and is a file, not a directory; choose another output directory", exits=1)
    if output.exists() and any(output.iterdir()):
        msg.fail(f"{output}: exists and is not empty; choose another output directory", exits=1)
    if not output.exists():  # its missing folders are made on saving, but not inside a file
        above = next(p for p in output.absolute().parents if p.exists())
        if not above.is_dir():
            msg.fail(f"{output}: {above} is a file, not a directory; choose another output directory", exits=1)


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help='a native model directory, or "embedded" (the package\'s English biLM)')
    parser.add_argument("output", type=Path, help="directory of the widened native model to write")
    parser.add_argument("--projection-dim", type=int, required=True, help="the new projection_dim per direction")
    parser.add_argument("--scale", type=float, default=0.1,
                        help="the LSTMs' new input and recurrent weights, as a fraction of their Glorot bound "
                        "(default %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed of those new weights (default %(default)s)")
    args = parser.parse_args(argv)

    check_scale(args.scale)
    source = model_path(args.model)
    if not is_native(source):
        msg.fail(f"{source}: not a native spacy-elmo model directory (no elmo.json)", exits=1)
    check_output(args.output)
    try:
        model = load_native(source)
        bilm = widen_projection(model.bilm, args.projection_dim, scale=args.scale, seed=args.seed)
        head = widen_softmax(model.head, args.projection_dim) if model.head is not None else None
    except (WeightsError, ValueError) as err:
        msg.fail(str(err), exits=1)
    metadata = dict(model.metadata)
    metadata["widened_from"] = {
        "model": str(args.model), "projection_dim": model.bilm.config.projection_dim,
        "scale": args.scale, "seed": args.seed,
    }
    try:
        save_native(args.output, bilm, model.vocab, head, metadata)
    except OSError as err:
        msg.fail(f"{args.output}: cannot write the widened model ({err})", exits=1)
    n_old = sum(p.numel() for p in model.bilm.parameters())
    n_new = sum(p.numel() for p in bilm.parameters())
    msg.good(f"{args.output}: projection_dim {model.bilm.config.projection_dim} -> {args.projection_dim}, "
             f"biLM parameters {n_old:,} -> {n_new:,}" + (", softmax widened" if head is not None else ""))


if __name__ == "__main__":
    main()
