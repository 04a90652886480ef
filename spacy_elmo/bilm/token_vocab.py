"""The token layer's own vocabularies: the words of a word table, and a character dictionary.

A word table's vocabulary maps a token to a row of the token layer's table:
the pretrained rows first (`words`), then the learned special rows (sentence
boundaries and unknown words) where the table has them. How a token becomes
its key is part of the vocabulary, because pretrained tables differ: GloVe's
words are lower-cased, ELMoForManyLangs looks words up after cutting them to
`max_characters_per_token - 2` characters.

A character dictionary is the alternative to UTF-8 bytes as the character
CNN's input (ELMoForManyLangs' `char.dic`): each character has an id, and a
token becomes [begin, its characters (cut to max_chars - 2), end, padding].
Ids are stored +1 so that 0 can mark absent tokens, as for bytes.
ELMoForManyLangs writes its begin-of-word slot with the id of `<eow>` and its
end-of-word slot with the id of `<bow>` (`create_one_batch`); its models were
trained that way, so `swap_word_ends` reproduces it.
"""
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

import numpy

# the learned special rows of a table built by this package, in this order
TABLE_SPECIALS = ("<S>", "</S>", "<UNK>")

PathLike = Union[str, Path]


@dataclass
class WordTableVocabulary:
    """Words of a word table, in row order, and how tokens are looked up.

    `specials` are names of learned rows that follow the words (row
    len(words) + i); `bos`, `eos` and `unknown` name rows among words or
    specials. `lowercase` lower-cases a token before the lookup;
    `truncate_chars` cuts it to that many characters first.
    """

    words: List[str]
    specials: List[str] = field(default_factory=lambda: list(TABLE_SPECIALS))
    bos: str = "<S>"
    eos: str = "</S>"
    unknown: str = "<UNK>"
    lowercase: bool = False
    truncate_chars: Optional[int] = None

    def __post_init__(self) -> None:
        self.words = list(self.words)
        self.specials = list(self.specials)
        self._index: Dict[str, int] = {}
        for i, word in enumerate(self.words + self.specials):
            if word in self._index:
                raise ValueError(f"word table vocabulary: duplicate entry {word!r}")
            self._index[word] = i
        missing = [name for name in (self.bos, self.eos, self.unknown) if name not in self._index]
        if missing:
            raise ValueError(f"word table vocabulary: the rows {missing} are neither words nor specials")
        self.bos_id = self._index[self.bos]
        self.eos_id = self._index[self.eos]
        self.unknown_id = self._index[self.unknown]

    @property
    def n_rows(self) -> int:
        return len(self.words)

    def __len__(self) -> int:
        return len(self.words) + len(self.specials)

    def key(self, token: str) -> str:
        if self.truncate_chars is not None:
            token = token[: self.truncate_chars]
        return token.lower() if self.lowercase else token

    def encode(self, tokens: Sequence[str]) -> List[int]:
        get, unknown = self._index.get, self.unknown_id
        return [get(self.key(token), unknown) for token in tokens]

    def __contains__(self, token: str) -> bool:
        return self.key(token) in self._index

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "WordTableVocabulary":
        return cls(**data)


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
        self._index = {char: i + 1 for i, char in enumerate(self.chars)}  # +1: 0 marks absent tokens
        if len(self._index) != len(self.chars):
            raise ValueError("character dictionary: duplicate entries")
        names = (self.bow, self.eow, self.bos, self.eos, self.unknown, self.pad)
        missing = [name for name in names if name not in self._index]
        if missing:
            raise ValueError(f"character dictionary: missing the special entries {missing}")

    def __len__(self) -> int:
        return len(self.chars)

    def id(self, name: str) -> int:
        """The stored (+1) id of an entry."""
        return self._index[name]

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "CharDictionary":
        return cls(**data)


class DictionaryCharIdEncoder:
    """Tokens -> rows of (max_chars,) character-dictionary ids; `CharIdEncoder`'s interface."""

    def __init__(self, dictionary: CharDictionary, max_chars: int, boundary_strings: bool = False) -> None:
        self.dictionary = dictionary
        self.max_chars = max_chars
        self.boundary_strings = boundary_strings
        begin, end = dictionary.id(dictionary.bow), dictionary.id(dictionary.eow)
        self.begin, self.end = (end, begin) if dictionary.swap_word_ends else (begin, end)
        self.pad_id = dictionary.id(dictionary.pad)
        self.unknown_id = dictionary.id(dictionary.unknown)
        self.bos = self._row([dictionary.id(dictionary.bos)])
        self.eos = self._row([dictionary.id(dictionary.eos)])
        self._cache: Dict[str, numpy.ndarray] = {}

    def _row(self, ids: Sequence[int]) -> numpy.ndarray:
        row = numpy.full(self.max_chars, self.pad_id, dtype=numpy.int64)
        row[0] = self.begin
        row[1 : 1 + len(ids)] = ids
        row[1 + len(ids)] = self.end
        row.flags.writeable = False
        return row

    def ids(self, token: str) -> numpy.ndarray:
        if self.boundary_strings and token in (self.dictionary.bos, self.dictionary.eos):
            return self.bos if token == self.dictionary.bos else self.eos
        row = self._cache.get(token)
        if row is None:
            index, unknown = self.dictionary._index, self.unknown_id
            row = self._row([index.get(char, unknown) for char in token[: self.max_chars - 2]])
            if len(self._cache) < 100_000:
                self._cache[token] = row
        return row

    def encode(self, tokens: Iterable[str]) -> numpy.ndarray:
        """(2 + n, max_chars) ids: the sentence boundaries, then each token."""
        return numpy.stack([self.bos, self.eos] + [self.ids(token) for token in tokens])


VOCABULARIES_FILE = "token_vocab.json"


def save_token_vocabularies(
    path: PathLike, words: Optional[WordTableVocabulary], chars: Optional[CharDictionary]
) -> None:
    data = {
        "word_table": words.to_dict() if words is not None else None,
        "characters": chars.to_dict() if chars is not None else None,
    }
    Path(path).write_text(json.dumps(data, ensure_ascii=False) + "\n", encoding="utf-8")


def load_token_vocabularies(path: PathLike) -> tuple:
    """(word table vocabulary or None, character dictionary or None); ValueError if malformed."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        words = data.get("word_table")
        chars = data.get("characters")
        return (
            WordTableVocabulary.from_dict(words) if words else None,
            CharDictionary.from_dict(chars) if chars else None,
        )
    except (OSError, ValueError, TypeError, AttributeError) as err:
        raise ValueError(f"{path}: not a valid token vocabulary file ({err})") from None


__all__ = [
    "TABLE_SPECIALS",
    "WordTableVocabulary",
    "CharDictionary",
    "DictionaryCharIdEncoder",
    "save_token_vocabularies",
    "load_token_vocabularies",
    "VOCABULARIES_FILE",
]
