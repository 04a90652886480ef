"""The vocabulary of the token layer's word table.

It maps a token to a row of the table: the pretrained rows first (`words`),
then the learned special rows (sentence boundaries and unknown words) where
the table has them. How a token becomes its key is part of the vocabulary,
because pretrained tables differ: GloVe's words are lower-cased,
ELMoForManyLangs looks words up after cutting them to
`max_characters_per_token - 2` characters.
"""
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Sequence

# the learned special rows of a table built by this package, in this order
TABLE_SPECIALS = ("<S>", "</S>", "<UNK>")


@dataclass
class WordTableVocabulary:
    """Words of a word table in row order, then `specials` (learned rows; `bos`, `eos`, `unknown` name
    rows of either). A token is cut to `truncate_chars` and lower-cased (`lowercase`) before the lookup."""

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


__all__ = ["TABLE_SPECIALS", "WordTableVocabulary"]
