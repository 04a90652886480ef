"""Write a biLM's word table as a spaCy pipeline's static vectors, for the fair baseline.

    python scripts/static_vectors.py training/static_vectors            # the embedded model's table
    python scripts/static_vectors.py OUT --elmo-model pretrained        # training/pretrain/model-best's
    python scripts/static_vectors.py OUT --weights MODEL
    python scripts/static_vectors.py OUT --overwrite                    # replace what OUT holds
    python scripts/train.py configs/ewt_baseline.cfg training/ewt_baseline_vectors ... \\
        --paths.vectors OUT --components.tok2vec.model.embed.include_static_vectors true

The CNN baseline with these vectors sees the same pretrained word vectors as
the ELMo pipeline's biLM (its token layer's frozen table), so the difference
between the two is what the biLM's contextual layers add. OUT is a blank
pipeline whose vectors hold the table's rows, under each word and, for a
lower-cased table, its Title-case and UPPER-case forms; OUT/word_table.json
names the model and the table's source, licence and checksums. Needs no
download and no vector package: the rows come from the model's weights.
An OUT that exists and is not empty is refused; --overwrite replaces it
whole (the project's `static-vectors` step passes it: it rebuilds).
"""
import argparse
import sys
from pathlib import Path
from typing import List, Optional

import srsly
import torch
from wasabi import msg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spacy_elmo.pretrain.word_table import write_spacy_vectors  # noqa: E402
from spacy_elmo.resumable_training import clear_output, occupied_output  # noqa: E402
from spacy_elmo.source_runs import add_allow_unfinished_option, unfinished_source_problem  # noqa: E402


def check_output(output: Path, overwrite: bool, weights: Optional[str]) -> None:
    """Exit with one line where OUTPUT exists and is not an empty folder, unless `overwrite`: the
    vectors were written over what it held, and a component or file of an earlier pipeline there
    stayed beside them. An OUTPUT that is or holds the biLM read (`weights`) is refused too:
    replacing it would delete the model."""
    if weights and Path(weights).exists():
        model, target = Path(weights).resolve(), output.resolve()
        if target == model or target in model.parents:
            msg.fail(f"{output}: holds the biLM {weights}; choose another output", exits=1)
    occupied = occupied_output(output, overwrite)
    if occupied:
        msg.fail(occupied, exits=1)


def check_lang(lang: str) -> None:
    """Exit with one line where spaCy has no language `lang`, before the biLM is loaded."""
    from spacy_elmo.cli._util import spacy_lang_problem

    problem = spacy_lang_problem(lang)
    if problem:
        msg.fail(problem, exits=1)


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output", type=Path, help="directory of the spaCy pipeline to write")
    parser.add_argument("--weights", default=None,
                        help="the biLM: a native model directory, archive, URL or catalogue name "
                        "(default: the embedded English model)")
    parser.add_argument("--elmo-model", choices=["shipped", "pretrained"], default="shipped",
                        help="as scripts/train.py: the embedded model, or the one in --pretrained-dir")
    parser.add_argument("--pretrained-dir", default="training/pretrain/model-best",
                        help="the biLM --elmo-model pretrained reads (%(default)s)")
    parser.add_argument("--lang", default="en", help="language of the blank pipeline (%(default)s)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace OUTPUT where it exists and is not empty (else that is refused)")
    add_allow_unfinished_option(parser)
    args = parser.parse_args(argv)
    if args.weights is None and args.elmo_model == "pretrained":
        args.weights = args.pretrained_dir
    if args.weights and not args.allow_unfinished:
        unfinished = unfinished_source_problem(args.weights, "the biLM")
        if unfinished:
            msg.fail(unfinished, exits=1)
    check_output(args.output, args.overwrite, args.weights)
    check_lang(args.lang)

    from spacy_elmo.cli._util import model_source
    from spacy_elmo.io import WeightsError, load_model

    try:
        model = load_model(model_source(args.weights))  # "embedded": the package's own, as in every command
    except (WeightsError, OSError) as err:  # one line, not a traceback
        hint = ""
        if args.elmo_model == "pretrained" and args.weights == args.pretrained_dir:
            hint = (" (--elmo-model pretrained reads the project's pretrained biLM: run the `pretrain` step "
                    "with --vars.elmo_model pretrained first, or pass --pretrained-dir or --weights)")
        msg.fail(f"cannot load the biLM {args.weights}: {err}{hint}", exits=1)
    bilm = model.bilm
    if not bilm.config.word_table_rows or bilm.word_table_vocab is None:
        msg.fail(f"{args.weights or 'the embedded model'} has no word table: its token layer reads "
                 "characters only, so there are no static vectors to share", exits=1)
    table_info = model.metadata.get("word_table") or {}
    lowercase = bool(bilm.word_table_vocab.lowercase)  # as the biLM looks words up (a converted model: cased)
    words = bilm.word_table_vocab.words
    table: torch.Tensor = bilm.token_encoder.word_table  # type: ignore[assignment]
    vectors = table.detach().float().cpu().numpy()
    clear_output(args.output)  # what is there (--overwrite) is replaced whole: no stale component stays
    n_keys = write_spacy_vectors(args.output, words, vectors, args.lang, lowercase)
    srsly.write_json(args.output / "word_table.json", {
        "model": args.weights or "embedded",
        "rows": len(words),
        "dim": int(vectors.shape[1]),
        "lowercase": lowercase,
        "table": {k: table_info[k] for k in ("source", "pruning", "sha256") if k in table_info},
    })
    msg.good(f"{args.output}: spaCy vectors, {len(words):,} rows x {vectors.shape[1]} under {n_keys:,} keys",
             f"train with them: --paths.vectors {args.output} "
             "--components.tok2vec.model.embed.include_static_vectors true")


if __name__ == "__main__":
    main()
