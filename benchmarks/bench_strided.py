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
from common import ewt_sentences, machine, table  # noqa: E402

from spacy_elmo.layers.segments import _SENTENCE_FINAL  # noqa: E402


def layers(weights, words, max_length: int, stride: int) -> numpy.ndarray:
    nlp = spacy.blank("en")
    model = {"@architectures": "spacy-elmo.ElmoBiLM.v1", "max_length": max_length, "stride": stride}
    nlp.add_pipe("elmo", config={"weights": weights, "model": model})
    starts: List[Optional[Union[bool, int]]] = [True]
    starts += [False] * (len(words) - 1)
    doc = Doc(nlp.vocab, words=words, sent_starts=starts)
    return nlp(doc)._.elmo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--weights", default=None, help="a model (default: the embedded biLM)")
    parser.add_argument("--tokens", type=int, default=300)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--stride", type=int, default=192)
    args = parser.parse_args()
    words = [";" if w in _SENTENCE_FINAL else w for s in ewt_sentences(300) for w in s][: args.tokens]
    whole = layers(args.weights, words, 2 * len(words), 2 * len(words))
    near = slice(args.max_length - 16, args.max_length + 16)
    rows = []
    for name, stride in (("cut, no overlap", args.max_length), (f"windows, stride {args.stride}", args.stride)):
        error = numpy.abs(layers(args.weights, words, args.max_length, stride) - whole).max(axis=(0, 2))
        rows.append([name, f"{error[near].max():.3g}", f"{error.max():.3g}"])
    print(f"Machine: {machine()}\nCommand: python {' '.join(sys.argv)}\n")
    print(f"{len(words)} tokens, max_length {args.max_length}, weights {args.weights or 'embedded'}\n")
    print(table(rows, ["reading", "largest difference near the old cut", "largest difference, whole run"]))


if __name__ == "__main__":
    main()
