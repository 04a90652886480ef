"""`corpus`: evaluation corpora (UD CoNLL-U, Universal NER IOB2) to .spacy files."""
import random
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional, Tuple

import typer
from wasabi import msg

from ._util import check_at_least, fail

if TYPE_CHECKING:
    from spacy.tokens import Doc


def corpus_cli(
    kind: str = typer.Argument(..., help="ud (CoNLL-U: tags, morphology, dependencies) or ner (IOB2 entities)"),
    input_path: Path = typer.Argument(..., help="Input file, plain or gzipped (x.conllu also finds x.conllu.gz)"),
    output_path: Path = typer.Argument(..., help=".spacy file to write"),
    n_sents: int = typer.Option(10, "--n-sents", "-n", help="Sentences per doc"),
    limit: int = typer.Option(0, "--limit", help="Read only the first N sentences (0: all)"),
    dev_output: Optional[Path] = typer.Option(None, "--dev-output", help="Also write a held-out split here"),
    dev_fraction: float = typer.Option(0.1, "--dev-fraction", help="Share of docs for --dev-output"),
    dev_split: str = typer.Option(
        "last", "--dev-split",
        help="Which docs --dev-output takes: 'last' (the file's last ones) or 'shuffled' (drawn with --seed)",
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of --dev-split shuffled"),
) -> None:
    """Convert an evaluation corpus to a spaCy DocBin, sentences grouped n to a doc."""
    from ..gold_data import CorpusError, ud_docs, uner_docs, write_docbin
    from ..io.atomic import staged_files

    if kind not in ("ud", "ner"):
        fail(f"KIND must be 'ud' or 'ner', got {kind!r}")
    check_at_least("--n-sents", n_sents, 1)
    check_at_least("--limit", limit, 0, "0: all")
    if not 0.0 < dev_fraction < 1.0:  # checked without --dev-output too: a wrong value is never silent
        fail(f"--dev-fraction must be between 0 and 1, got {dev_fraction:g}")
    if dev_split not in DEV_SPLITS:
        fail(f"--dev-split must be one of {DEV_SPLITS}, got {dev_split!r}")
    check_outputs(input_path, [output_path] + ([dev_output] if dev_output is not None else []))
    try:
        docs = ud_docs(input_path, n_sents, limit) if kind == "ud" else uner_docs(input_path, n_sents, limit)
    except CorpusError as err:
        fail(str(err))
    if not docs:
        fail(f"{input_path}: no sentences found")
    held_out: List["Doc"] = []
    if dev_output is not None:
        docs, held_out = split_off(docs, dev_fraction, n_sents, dev_split, seed)
    # both files or neither, also at a Ctrl-C or a kill: each is written under a temporary name, and both
    # are renamed into place once written (a new training file beside an old dev file leaked dev into train)
    path: Optional[Path] = None
    try:
        with staged_files() as stage:
            for part, path in ((docs, output_path), (held_out, dev_output)):
                if path is not None:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    stage.write(path, partial(write_docbin, part))
    except OSError as err:
        fail(f"{err.filename or path}: cannot write it ({err.strerror or err}); nothing was written")
    n_tokens = sum(len(d) for d in docs)
    msg.good(f"Wrote {len(docs)} docs ({n_tokens:,} tokens) to {output_path}")
    if held_out:
        msg.good(f"Wrote {len(held_out)} held-out docs to {dev_output}")


def check_outputs(input_path: Path, outputs: List[Path]) -> None:
    """Exit before any work where an output is not a .spacy file, is the input, is a directory, or
    two outputs are one file: each was written over without a word (the input, or the held-out
    split replaced by the training docs), with exit 0."""
    seen: List[Path] = []
    for output in outputs:
        if not output.name.endswith(".spacy"):
            fail(f"{output}: the output must be a .spacy file (spaCy's corpus reader reads nothing from other names)")
        if output.is_dir():
            fail(f"{output}: is a directory; give the .spacy file to write")
        where = output.resolve()
        if input_path.exists() and where == input_path.resolve():
            fail(f"{output}: is the input file; write the .spacy file elsewhere")
        if where in seen:
            fail(f"{output}: given as both the output and --dev-output; give two files")
        seen.append(where)


# "last": what the project's NER runs used (UNER's dev file is ordered by genre, so its last tenth is
# weblog alone); "shuffled": docs drawn from the whole file, each kept whole, in the file's order
DEV_SPLITS = ("last", "shuffled")


def split_off(
    docs: List["Doc"], fraction: float, n_sents: int, how: str = "last", seed: int = 0
) -> Tuple[List["Doc"], List["Doc"]]:
    """(the docs to train on, `fraction` of them held out, at least one: the last ones, or with `how`
    "shuffled" ones drawn by `seed`), or exit before anything is written when either side would be
    empty: a training file of no docs was written with exit 0 and went unnoticed until training on it."""
    n_dev = max(1, int(round(len(docs) * fraction)))
    if n_dev >= len(docs):
        fail(
            f"--dev-output: {len(docs)} doc(s) of up to {n_sents} sentences leave no training docs when "
            f"--dev-fraction {fraction:g} holds out {n_dev}; give more sentences, a smaller --n-sents or "
            "a smaller --dev-fraction"
        )
    if how == "shuffled":
        held = set(random.Random(seed).sample(range(len(docs)), n_dev))
        return [d for i, d in enumerate(docs) if i not in held], [d for i, d in enumerate(docs) if i in held]
    return docs[:-n_dev], docs[-n_dev:]
