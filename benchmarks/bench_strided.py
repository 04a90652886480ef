"""Overlapping windows against the whole sentence: how far a long run's vectors move at a cut.

    python benchmarks/bench_strided.py [--weights DIR] [--tokens 300] [--max-length 256] [--stride 192]

The first `--tokens` tokens of EWT train, joined into one run (sentence-final
punctuation replaced by ";", so only a cut at max_length splits it), are read
by the `elmo` component three ways: whole (max_length above the run), cut
without overlap (stride = max_length), and in overlapping windows (`--stride`).
For the tokens within 16 of the old cut and for the whole run, it prints the
largest absolute difference from the whole-sentence layers (over layers and
width). `tests/layers/test_segments.py` asserts the same comparison.
"""
import argparse
import sys
from pathlib import Path
from typing import List, Optional, Union

import numpy
import spacy
from spacy.tokens import Doc

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import POSITIVE, check_weights, command_line, ewt_sentences, machine, table  # noqa: E402

from spacy_elmo.layers.segments import _SENTENCE_FINAL  # noqa: E402


def layers(weights, words, max_length: int, stride: int) -> numpy.ndarray:
    nlp = spacy.blank("en")
    model = {"@architectures": "spacy-elmo.ElmoBiLM.v1", "max_length": max_length, "stride": stride}
    nlp.add_pipe("elmo", config={"weights": weights, "model": model})
    starts: List[Optional[Union[bool, int]]] = [True]
    starts += [False] * (len(words) - 1)
    doc = Doc(nlp.vocab, words=words, sent_starts=starts)
    return nlp(doc)._.elmo


def run_of_words(n_tokens: int) -> List[str]:
    """The first `n_tokens` tokens of EWT train as one run (sentence-final punctuation made ";")."""
    for n_sentences in (300, 0):  # 300 sentences hold the default 300 tokens many times over; 0: all of EWT train
        words = [";" if w in _SENTENCE_FINAL else w for s in ewt_sentences(n_sentences) for w in s][:n_tokens]
        if len(words) == n_tokens:
            break
    return words


def near_cut(max_length: int) -> slice:
    """The tokens within 16 of the old cut (at max_length)."""
    return slice(max(0, max_length - 16), max_length + 16)


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """One usage line for settings the comparison cannot run with."""
    if args.stride > args.max_length:
        parser.error(f"--stride {args.stride}: must be between 1 and --max-length ({args.max_length})")
    if args.tokens <= args.max_length:
        parser.error(f"--tokens {args.tokens}: a run of at most --max-length ({args.max_length}) tokens is never "
                     f"cut; give at least {args.max_length + 1}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--weights", default=None, help="a model (default: the embedded biLM)")
    parser.add_argument("--tokens", type=POSITIVE, default=300, help="tokens in the run (more than --max-length)")
    parser.add_argument("--max-length", type=POSITIVE, default=256)
    parser.add_argument("--stride", type=POSITIVE, default=192, help="1 to --max-length")
    args = parser.parse_args()
    check_args(parser, args)
    check_weights(args.weights)
    words = run_of_words(args.tokens)
    if len(words) <= args.max_length:
        raise SystemExit(f"EWT train has {len(words)} tokens: fewer than --max-length + 1 ({args.max_length + 1})")
    whole = layers(args.weights, words, 2 * len(words), 2 * len(words))
    near = near_cut(args.max_length)
    rows = []
    for name, stride in (("cut, no overlap", args.max_length), (f"windows, stride {args.stride}", args.stride)):
        error = numpy.abs(layers(args.weights, words, args.max_length, stride) - whole).max(axis=(0, 2))
        rows.append([name, f"{error[near].max():.3g}", f"{error.max():.3g}"])
    print(f"Machine: {machine()}\n{command_line()}\n")
    print(f"{len(words)} tokens, max_length {args.max_length}, weights {args.weights or 'embedded'}\n")
    print(table(rows, ["reading", "largest difference near the old cut", "largest difference, whole run"]))


if __name__ == "__main__":
    main()
