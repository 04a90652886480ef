"""Copy a trained pipeline with its tokenizer replaced by one learned from a treebank's training corpus.

    python scripts/retokenize.py training/RUN/model-best training/RUN-tbtok --train corpus/ewt-train.spacy
    python -m spacy_elmo evaluate training/RUN-tbtok corpus/ewt-test.spacy --output metrics/RUN-tbtok.json

The copy's tokenizer is `spacy-elmo.TreebankTokenizer.v1`: the language's default
tokenizer plus the special cases and whole-token shapes it learns from the
gold tokens of --train (see spacy_elmo/pipeline/treebank_tokenizer.py). Only
the tokenizer changes: every component's weights are the trained ones, so
the copy measures what the tokenizer alone does at prediction time. Prints
how many gold tokens of each --report corpus the old and the new tokenizer
produce exactly. An OUTPUT that exists and is not empty is refused;
--overwrite replaces it whole.
"""
import argparse
import sys
from pathlib import Path
from typing import List, Optional

import spacy
from spacy.tokenizer import Tokenizer
from spacy.tokens import Doc, DocBin
from spacy.training import Example
from wasabi import msg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spacy_elmo.resumable_training import clear_output, occupied_output  # noqa: E402

TOKENIZER = "spacy-elmo.TreebankTokenizer.v1"


def read_docs(path: Path, vocab) -> List[Doc]:
    """The docs of a .spacy corpus, or exit with one line where it is not one."""
    try:
        return list(DocBin().from_disk(path).get_docs(vocab))
    except (OSError, ValueError) as err:
        msg.fail(f"{path}: not a readable .spacy corpus ({' '.join(str(err).split())[:200]})", exits=1)
        raise


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", type=Path, help="a trained spaCy pipeline directory")
    parser.add_argument("output", type=Path, help="where to write the copy")
    parser.add_argument("--train", type=Path, required=True, help="the .spacy corpus whose gold tokens teach the rules")
    parser.add_argument("--report", type=Path, nargs="*", action="extend", default=[],
                        help=".spacy corpora on which to print the old and new token accuracy")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace OUTPUT where it exists and is not empty (else that is refused)")
    args = parser.parse_args(argv)
    for path in [args.model, args.train, *args.report]:
        if not path.exists():
            msg.fail(f"{path} does not exist", exits=1)
    model, output = args.model.resolve(), args.output.resolve()
    if output == model or output in model.parents:  # --overwrite would delete the pipeline
        msg.fail("the output must be a new directory, not the pipeline itself nor a folder holding it", exits=1)
    occupied = occupied_output(args.output, args.overwrite)
    if occupied:
        msg.fail(occupied, exits=1)

    from spacy_elmo.pipeline.treebank_tokenizer import TreebankTokenizer, gold_tokens_found

    try:
        nlp = spacy.load(args.model, config={"nlp": {"tokenizer": {"@tokenizers": TOKENIZER}}})
    except (OSError, ValueError) as err:
        msg.fail(f"{args.model}: not a spaCy pipeline that loads ({' '.join(str(err).split())[:200]})", exits=1)
        raise
    tokenizer = nlp.tokenizer
    assert isinstance(tokenizer, TreebankTokenizer)
    before = Tokenizer(nlp.vocab).from_bytes(tokenizer.to_bytes())  # the pipeline's own, as trained
    train = read_docs(args.train, nlp.vocab)
    reports = [(path, read_docs(path, nlp.vocab)) for path in args.report]  # read before anything is written
    tokenizer.initialize(lambda: (Example(nlp.make_doc(doc.text), doc) for doc in train), nlp=nlp)
    clear_output(args.output)  # --overwrite: replaced whole
    nlp.to_disk(args.output)
    msg.good(f"Wrote {args.output}: {args.model}'s components with a tokenizer learned from {args.train}")
    for path, docs in reports:
        old, new = gold_tokens_found(before, docs), gold_tokens_found(nlp.make_doc, docs)
        msg.info(f"{path}: gold tokens found {old:.2%} -> {new:.2%}")


if __name__ == "__main__":
    main()
