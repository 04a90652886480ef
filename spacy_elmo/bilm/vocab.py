"""Word vocabularies: the softmax's (and word-input encoders'), and the token layer's word table's.

`Vocabulary` is laid out as bilm-tf's vocab files: one word per line, `<S>`,
`</S>` and `<UNK>` present (by convention first); ids are line numbers.
`WordTableVocabulary` maps a token to a row of the word table, pretrained rows
first, then learned special rows; how a token becomes its key is part of it,
because tables differ (GloVe's words are lower-cased, ELMoForManyLangs cuts
words to `max_characters_per_token - 2` characters). A token is looked up
among the pretrained words only: the special rows are the model's boundaries
and its unknown row, never a text token's (a literal "<S>" in a case-sensitive
table is an unknown word). Where the names of the boundaries are pretrained
words themselves (ELMoForManyLangs' `word.dic` holds `<bos>`, `<eos>` and
`<oov>`, and no specials), a text token equal to one reads that row, as the
reference does.
"""
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

BOS_TOKEN, EOS_TOKEN, UNK_TOKEN = "<S>", "</S>", "<UNK>"
SPECIAL_TOKENS = (BOS_TOKEN, EOS_TOKEN, UNK_TOKEN)


class Vocabulary:
    """Words with ids; `bos`, `eos` and `unk` are the ids of the special tokens."""

    def __init__(self, words: Iterable[str]) -> None:
        self.words: List[str] = []
        self._index: Dict[str, int] = {}
        for word in words:
            if word in self._index:
                raise ValueError(f"duplicate word in vocabulary: {word!r:.80}")
            self._index[word] = len(self.words)
            self.words.append(word)
        missing = [t for t in SPECIAL_TOKENS if t not in self._index]
        if missing:
            raise ValueError(f"vocabulary lacks the special token(s) {missing}")
        self.bos, self.eos, self.unk = (self._index[t] for t in SPECIAL_TOKENS)

    @classmethod
    def from_counts(cls, counts: Dict[str, int], max_size: int, min_count: int = 1) -> "Vocabulary":
        """Specials first, then the most frequent words (ties broken alphabetically)."""
        kept = (w for w, c in counts.items() if c >= min_count and w not in SPECIAL_TOKENS)
        ranked = sorted(kept, key=lambda w: (-counts[w], w))
        return cls(list(SPECIAL_TOKENS) + ranked[: max(0, max_size - len(SPECIAL_TOKENS))])

    @classmethod
    def from_file(cls, path: Union[str, Path]) -> "Vocabulary":
        """The vocabulary of a file of one word a line. Read as utf-8-sig: a byte-order mark an
        editor wrote was kept on the first word, which then was an unknown word, silently."""
        path = Path(path)
        words = [w.strip() for w in path.read_text(encoding="utf-8-sig").split("\n") if w.strip()]
        try:
            return cls(words)
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from None

    def to_file(self, path: Union[str, Path]) -> None:
        Path(path).write_text("".join(w + "\n" for w in self.words), encoding="utf-8")

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word in self._index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocabulary) and self.words == other.words

    def index(self, word: str) -> int:
        return self._index.get(word, self.unk)

    def encode(self, words: Sequence[str]) -> List[int]:
        get, unk = self._index.get, self.unk
        return [get(w, unk) for w in words]


# the learned special rows of a table built by this package, in this order
TABLE_SPECIALS = ("<S>", "</S>", "<UNK>")


@dataclass
class WordTableVocabulary:
    """Words of a word table in row order, then `specials` (learned rows; `bos`, `eos`, `unknown` name
    rows of either). A token is cut to `truncate_chars` and lower-cased (`lowercase`) before the lookup,
    which finds pretrained words only (`unknown_id` otherwise)."""

    words: List[str]
    specials: List[str] = field(default_factory=lambda: list(TABLE_SPECIALS))
    bos: str = "<S>"
    eos: str = "</S>"
    unknown: str = "<UNK>"
    lowercase: bool = False
    truncate_chars: Optional[int] = None

    def __post_init__(self) -> None:
        self.words, self.specials = list(self.words), list(self.specials)
        if not isinstance(self.lowercase, bool):  # bool("false") would lower-case: another lookup
            raise ValueError(f"word table vocabulary: lowercase must be true or false, got {self.lowercase!r}")
        if self.truncate_chars is not None and (isinstance(self.truncate_chars, bool)
                                                or not isinstance(self.truncate_chars, int) or self.truncate_chars < 1):
            raise ValueError(f"word table vocabulary: truncate_chars must be a whole number >= 1 (or null), "
                             f"got {self.truncate_chars!r}")
        rows: Dict[str, int] = {}
        for i, word in enumerate(self.words + self.specials):
            if word in rows:
                raise ValueError(f"word table vocabulary: duplicate entry {word!r:.80}")
            rows[word] = i
        missing = [name for name in (self.bos, self.eos, self.unknown) if name not in rows]
        if missing:
            raise ValueError(f"word table vocabulary: the rows {missing} are neither words nor specials")
        self.bos_id, self.eos_id, self.unknown_id = (rows[n] for n in (self.bos, self.eos, self.unknown))
        # what a token can find: the pretrained words (rows of the specials are the model's, not text's)
        self._index: Dict[str, int] = {word: i for word, i in rows.items() if i < len(self.words)}

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


__all__ = ["Vocabulary", "WordTableVocabulary", "BOS_TOKEN", "EOS_TOKEN", "UNK_TOKEN", "SPECIAL_TOKENS",
           "TABLE_SPECIALS"]
