"""The word vocabulary of a language model's softmax (and of word-input encoders).

Layout as bilm-tf's vocab files: one word per line, `<S>`, `</S>` and `<UNK>`
present (by convention first). Ids are line numbers.
"""
from pathlib import Path
from typing import Dict, Iterable, List, Sequence, Union

BOS_TOKEN = "<S>"
EOS_TOKEN = "</S>"
UNK_TOKEN = "<UNK>"
SPECIAL_TOKENS = (BOS_TOKEN, EOS_TOKEN, UNK_TOKEN)


class Vocabulary:
    def __init__(self, words: Iterable[str]) -> None:
        self.words: List[str] = []
        self._index: Dict[str, int] = {}
        for word in words:
            if word in self._index:
                raise ValueError(f"duplicate word in vocabulary: {word!r}")
            self._index[word] = len(self.words)
            self.words.append(word)
        missing = [t for t in SPECIAL_TOKENS if t not in self._index]
        if missing:
            raise ValueError(f"vocabulary lacks the special token(s) {missing}")
        self.bos = self._index[BOS_TOKEN]
        self.eos = self._index[EOS_TOKEN]
        self.unk = self._index[UNK_TOKEN]

    @classmethod
    def from_counts(cls, counts: Dict[str, int], max_size: int, min_count: int = 1) -> "Vocabulary":
        """Specials first, then the most frequent words (ties broken alphabetically)."""
        ranked = sorted(
            (w for w, c in counts.items() if c >= min_count and w not in SPECIAL_TOKENS),
            key=lambda w: (-counts[w], w),
        )
        return cls(list(SPECIAL_TOKENS) + ranked[: max(0, max_size - len(SPECIAL_TOKENS))])

    @classmethod
    def from_file(cls, path: Union[str, Path]) -> "Vocabulary":
        path = Path(path)
        words = [line.rstrip("\r\n") for line in path.open(encoding="utf-8")]
        words = [w.strip() for w in words if w.strip()]
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


__all__ = ["Vocabulary", "BOS_TOKEN", "EOS_TOKEN", "UNK_TOKEN", "SPECIAL_TOKENS"]
