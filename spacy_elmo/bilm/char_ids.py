"""Character ids as the character CNN reads them: UTF-8 bytes, or a character dictionary's entries.

A token becomes `max_chars` slots: begin-of-word, its characters (cut to
`max_chars - 2`), end-of-word, then padding; every id is +1, so that 0 marks
absent tokens. A sentence boundary is a special character between begin and
end. The published models read UTF-8 bytes (specials 256-260);
ELMoForManyLangs reads a `CharDictionary` (its `char.dic`), and writes its
begin slot with `<eow>` and its end slot with `<bow>` (`swap_word_ends`).
A literal "<S>" is an ordinary token unless `boundary_strings` (the reference's parity mode).
"""
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

import numpy

BOS_CHAR, EOS_CHAR, BOW_CHAR, EOW_CHAR, PAD_CHAR = 256, 257, 258, 259, 260
SHIFT = 1  # ids are stored +1 so that 0 is the padding of absent tokens
PAD_ID = PAD_CHAR + SHIFT
CACHED_TOKENS = 100_000  # rows kept: a corpus repeats its frequent words constantly


@dataclass
class CharDictionary:
    """Characters with ids (row order), and the names of the special entries."""

    chars: List[str]
    bow: str = "<bow>"
    eow: str = "<eow>"
    bos: str = "<bos>"
    eos: str = "<eos>"
    unknown: str = "<oov>"
    pad: str = "<pad>"
    swap_word_ends: bool = False

    def __post_init__(self) -> None:
        self.chars = list(self.chars)
        self.index = {char: i + SHIFT for i, char in enumerate(self.chars)}
        if len(self.index) != len(self.chars):
            raise ValueError("character dictionary: duplicate entries")
        missing = [n for n in (self.bow, self.eow, self.bos, self.eos, self.unknown, self.pad) if n not in self.index]
        if missing:
            raise ValueError(f"character dictionary: missing the special entries {missing}")

    def __len__(self) -> int:
        return len(self.chars)

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "CharDictionary":
        return cls(**data)


def token_to_char_ids(token: str, max_chars: int = 50) -> numpy.ndarray:
    """The (max_chars,) int64 byte ids of one token; a lone surrogate (spaCy can hold one) keeps its bytes."""
    data = token.encode("utf-8", errors="surrogatepass")[: max_chars - 2]
    ids = numpy.frombuffer(data, dtype=numpy.uint8).astype(numpy.int64) + SHIFT
    return _row(ids, BOW_CHAR + SHIFT, EOW_CHAR + SHIFT, PAD_ID, max_chars)


def _prefix(token: str, max_chars: int) -> str:
    """The characters of `token` its row can read: a character is at least one UTF-8 byte, and a row reads
    the first `max_chars - 2` bytes (or dictionary characters), so the first `max_chars - 2` characters
    give the same row. The caches of rows are keyed on it, so a long token costs them no more than a short one."""
    n = max_chars - 2
    return token[:n] if 0 <= n < len(token) else token


@lru_cache(maxsize=CACHED_TOKENS)
def _cached_byte_row(token: str, max_chars: int) -> numpy.ndarray:
    """`token_to_char_ids` of the most recent (token prefix, max_chars), shared by every byte encoder
    (read-only); called with `_prefix(token, max_chars)`, so no key is longer than a row reads."""
    row = token_to_char_ids(token, max_chars)
    row.flags.writeable = False
    return row


def _row(ids: Union[Sequence[int], numpy.ndarray], begin: int, end: int, pad: int, max_chars: int) -> numpy.ndarray:
    row = numpy.full(max_chars, pad, dtype=numpy.int64)
    row[0], row[1 + len(ids)] = begin, end
    row[1 : 1 + len(ids)] = ids
    return row


class CharIdEncoder:
    """Maps tokens to char-id rows (bytes, or a dictionary's); `bos` and `eos` are the boundaries' rows."""

    def __init__(self, max_chars: int = 50, boundary_strings: bool = False,
                 dictionary: Optional[CharDictionary] = None) -> None:
        self.max_chars, self.dictionary, self.boundary_strings = max_chars, dictionary, boundary_strings
        if dictionary is None:
            self.begin, self.end, self.pad_id = BOW_CHAR + SHIFT, EOW_CHAR + SHIFT, PAD_ID
            self.boundary_names, boundary_ids = ("<S>", "</S>"), (BOS_CHAR + SHIFT, EOS_CHAR + SHIFT)
        else:
            begin, end = dictionary.index[dictionary.bow], dictionary.index[dictionary.eow]
            self.begin, self.end = (end, begin) if dictionary.swap_word_ends else (begin, end)
            self.pad_id, self.unknown_id = dictionary.index[dictionary.pad], dictionary.index[dictionary.unknown]
            self.boundary_names = (dictionary.bos, dictionary.eos)
            boundary_ids = (dictionary.index[dictionary.bos], dictionary.index[dictionary.eos])
        self.bos, self.eos = (self._frozen_row([i]) for i in boundary_ids)
        self._cache: Dict[str, numpy.ndarray] = {}  # a dictionary's rows (bytes: `_cached_byte_row`)

    def _frozen_row(self, ids: Union[Sequence[int], numpy.ndarray]) -> numpy.ndarray:
        row = _row(ids, self.begin, self.end, self.pad_id, self.max_chars)
        row.flags.writeable = False  # rows are shared between calls
        return row

    def ids(self, token: str) -> numpy.ndarray:
        """The (max_chars,) ids of one token (read-only)."""
        if self.boundary_strings and token in self.boundary_names:
            return self.bos if token == self.boundary_names[0] else self.eos
        if 0 <= self.max_chars - 2 < len(token):  # `_prefix`, inline: the row caches key on what a row reads
            token = token[: self.max_chars - 2]
        if self.dictionary is None:
            return _cached_byte_row(token, self.max_chars)
        row = self._cache.get(token)
        if row is None:
            index, unknown = self.dictionary.index, self.unknown_id
            row = self._frozen_row([index.get(char, unknown) for char in token[: self.max_chars - 2]])
            if len(self._cache) < CACHED_TOKENS:
                self._cache[token] = row
        return row

    def encode(self, tokens: Iterable[str]) -> numpy.ndarray:
        """(2 + n, max_chars) ids: BOS, EOS, then each token."""
        return numpy.stack([self.bos, self.eos] + [self.ids(token) for token in tokens])


def batch_to_ids(sentences: List[List[str]], max_chars: int = 50, add_boundaries: bool = True) -> numpy.ndarray:
    """The reference layout (AllenNLP's `batch_to_ids`): (batch, max_len [+2], max_chars), 0 for absent tokens."""
    encoder = CharIdEncoder(max_chars)
    extra = 2 if add_boundaries else 0
    out = numpy.zeros((len(sentences), max((len(s) for s in sentences), default=0) + extra, max_chars), numpy.int64)
    for i, sentence in enumerate(sentences):
        rows = [encoder.ids(t) for t in sentence]
        rows = [encoder.bos] + rows + [encoder.eos] if add_boundaries else rows
        if rows:
            out[i, : len(rows)] = numpy.stack(rows)
    return out


__all__ = ["BOS_CHAR", "EOS_CHAR", "BOW_CHAR", "EOW_CHAR", "PAD_CHAR", "PAD_ID", "CharDictionary", "CharIdEncoder",
           "batch_to_ids", "token_to_char_ids"]
