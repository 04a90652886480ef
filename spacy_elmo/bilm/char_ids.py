"""Character ids exactly as the published ELMo models expect them.

A token becomes `max_chars` slots: begin-of-word, its UTF-8 bytes (truncated at
the byte level to `max_chars - 2`), end-of-word, then padding. Every id is
shifted by +1 so that 0 can mark absent tokens. Sentence boundaries are the
special tokens [bow, 256 or 257, eow]. By default a literal "<S>" typed by a
user is an ordinary 3-byte token: boundaries are added structurally by the
model, never recognised from text. `boundary_strings=True` maps the strings
"<S>" and "</S>" to the boundary ids as the reference vocabulary did (for
parity with its fixtures and with corpora that mark boundaries that way).
"""
from functools import lru_cache
from typing import Iterable, List

import numpy

BOS_CHAR = 256
EOS_CHAR = 257
BOW_CHAR = 258
EOW_CHAR = 259
PAD_CHAR = 260
SHIFT = 1  # ids are stored +1 so that 0 is the padding of absent tokens
PAD_ID = PAD_CHAR + SHIFT


def _boundary(char: int, max_chars: int) -> numpy.ndarray:
    ids = numpy.full(max_chars, PAD_ID, dtype=numpy.int64)
    ids[:3] = (BOW_CHAR + SHIFT, char + SHIFT, EOW_CHAR + SHIFT)
    return ids


def token_to_char_ids(token: str, max_chars: int = 50) -> numpy.ndarray:
    """The (max_chars,) int64 ids of one token, shifted +1.

    Lone surrogates (which spaCy can hold in a token) are kept as their
    surrogate-escaped bytes rather than raising, so every string has ids.
    """
    data = token.encode("utf-8", errors="surrogatepass")[: max_chars - 2]
    ids = numpy.full(max_chars, PAD_ID, dtype=numpy.int64)
    ids[0] = BOW_CHAR + SHIFT
    ids[1 : 1 + len(data)] = numpy.frombuffer(data, dtype=numpy.uint8).astype(numpy.int64) + SHIFT
    ids[1 + len(data)] = EOW_CHAR + SHIFT
    return ids


@lru_cache(maxsize=100_000)
def _cached_ids(token: str, max_chars: int) -> numpy.ndarray:
    """`token_to_char_ids`, kept for the most recent 100,000 (token, max_chars): a
    corpus repeats its frequent words constantly. Read-only: the rows are shared."""
    ids = token_to_char_ids(token, max_chars)
    ids.flags.writeable = False
    return ids


class CharIdEncoder:
    """Maps tokens to char-id rows, with the two sentence boundaries precomputed.

    Row 0 and 1 of `encode` output are always the begin- and end-of-sentence
    tokens; the tokens follow in the given order.
    """

    def __init__(self, max_chars: int = 50, boundary_strings: bool = False) -> None:
        self.max_chars = max_chars
        self.bos = _boundary(BOS_CHAR, max_chars)
        self.eos = _boundary(EOS_CHAR, max_chars)
        self.boundary_strings = boundary_strings

    def ids(self, token: str) -> numpy.ndarray:
        """The (max_chars,) ids of one token (read-only)."""
        if self.boundary_strings and token in ("<S>", "</S>"):
            return self.bos if token == "<S>" else self.eos
        return _cached_ids(token, self.max_chars)

    def encode(self, tokens: Iterable[str]) -> numpy.ndarray:
        """(2 + n, max_chars) ids: BOS, EOS, then each token."""
        return numpy.stack([self.bos, self.eos] + [self.ids(token) for token in tokens])


def char_lengths(char_ids: numpy.ndarray) -> numpy.ndarray:
    """Number of non-padding slots of each row (bow + bytes + eow)."""
    return ((char_ids != PAD_ID) & (char_ids != 0)).sum(axis=-1)


def batch_to_ids(sentences: List[List[str]], max_chars: int = 50, add_boundaries: bool = True) -> numpy.ndarray:
    """The reference layout: (batch, max_len [+2], max_chars) ids, 0 for absent tokens.

    Mostly for interoperability and tests; the model itself encodes only the
    distinct tokens of a batch.
    """
    extra = 2 if add_boundaries else 0
    longest = max((len(s) for s in sentences), default=0) + extra
    out = numpy.zeros((len(sentences), longest, max_chars), dtype=numpy.int64)
    bos, eos = _boundary(BOS_CHAR, max_chars), _boundary(EOS_CHAR, max_chars)
    for i, sentence in enumerate(sentences):
        rows = [token_to_char_ids(t, max_chars) for t in sentence]
        if add_boundaries:
            rows = [bos] + rows + [eos]
        if rows:
            out[i, : len(rows)] = numpy.stack(rows)
    return out


__all__ = [
    "BOS_CHAR",
    "EOS_CHAR",
    "BOW_CHAR",
    "EOW_CHAR",
    "PAD_CHAR",
    "PAD_ID",
    "token_to_char_ids",
    "CharIdEncoder",
    "char_lengths",
    "batch_to_ids",
]
