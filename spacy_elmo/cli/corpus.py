"""`corpus`: evaluation corpora (UD CoNLL-U, Universal NER IOB2) to .spacy files."""
from pathlib import Path
from typing import Optional

import typer
from wasabi import msg

from ._util import fail


def corpus_cli(
    kind: str = typer.Argument(..., help="ud (CoNLL-U: tags, morphology, dependencies) or ner (IOB2 entities)"),
    input_path: Path = typer.Argument(..., help="Input file, plain or gzipped (x.conllu also finds x.conllu.gz)"),
    output_path: Path = typer.Argument(..., help=".spacy file to write"),
    n_sents: int = typer.Option(10, "--n-sents", "-n", help="Sentences per doc"),
    limit: int = typer.Option(0, "--limit", help="Read only the first N sentences (0: all)"),
    dev_output: Optional[Path] = typer.Option(None, "--dev-output", help="Also write a held-out split here"),
    dev_fraction: float = typer.Option(0.1, "--dev-fraction", help="Share of docs for --dev-output (the last ones)"),
) -> None:
    """Convert an evaluation corpus to a spaCy DocBin, sentences grouped n to a doc."""
    from ..gold_data import CorpusError, ud_docs, uner_docs, write_docbin

    if kind not in ("ud", "ner"):
        fail(f"KIND must be 'ud' or 'ner', got {kind!r}")
    try:
        docs = ud_docs(input_path, n_sents, limit) if kind == "ud" else uner_docs(input_path, n_sents, limit)
    except CorpusError as err:
        fail(str(err))
    if not docs:
        fail(f"{input_path}: no sentences found")
    held_out = []
    if dev_output is not None:
        if not 0.0 < dev_fraction < 1.0:
            fail("--dev-fraction must be between 0 and 1")
        n_dev = max(1, int(round(len(docs) * dev_fraction)))
        docs, held_out = docs[:-n_dev], docs[-n_dev:]
        write_docbin(held_out, dev_output)
    write_docbin(docs, output_path)
    n_tokens = sum(len(d) for d in docs)
    msg.good(f"Wrote {len(docs)} docs ({n_tokens:,} tokens) to {output_path}")
    if held_out:
        msg.good(f"Wrote {len(held_out)} held-out docs to {dev_output}")
