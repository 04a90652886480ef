"""A bounded cache of context-free token vectors.

The token encoder is a pure function of the token's characters, so its output
can be reused across batches. Words can be preloaded from a list (the
reference's `vocab_to_cache`), or learned on the fly up to `max_size` entries
and `max_bytes` bytes (least recently used are evicted first). Unlike the
reference, a word missing from the cache is not mapped to a shared "unknown"
vector: it is computed by the character CNN, so cached and uncached results
are equal.

The vectors hold for the weights they were computed from: the owner checks
the cache against the weights' key (`validate`) on every call, and a changed
key empties it. Each entry is a copy of its row, never a view into a batch's
tensor, so the cache holds exactly the memory it counts.
"""
from collections import OrderedDict
from typing import Dict, List, Optional, Sequence, Set, Tuple

import torch

from .weights_key import WeightsKey


class TokenCache:
    def __init__(self, max_size: int = 50_000, learn: bool = True, max_bytes: Optional[int] = None) -> None:
        if max_size < 0:
            raise ValueError("max_size must be >= 0")
        if max_bytes is not None and max_bytes < 0:
            raise ValueError("max_bytes must be >= 0 (or None: bounded by max_size alone)")
        self.max_size = max_size
        self.max_bytes = max_bytes
        self.learn = learn
        self._vectors: "OrderedDict[str, torch.Tensor]" = OrderedDict()
        self._bytes = 0  # of the learned vectors
        self._pinned: Dict[str, torch.Tensor] = {}
        self._pinned_words: Set[str] = set()  # kept whatever the bounds; recomputed after a weight change
        # <S> and </S>: computed once, so that no batch sees other bits for them
        self.boundaries: Optional[torch.Tensor] = None
        self.key: Optional[WeightsKey] = None
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._vectors) + len(self._pinned)

    def __contains__(self, token: str) -> bool:
        return token in self._pinned or token in self._vectors

    @property
    def nbytes(self) -> int:
        """Bytes held by the cached vectors (learned and preloaded)."""
        return self._bytes + sum(_nbytes(v) for v in self._pinned.values())

    def validate(self, key: WeightsKey) -> None:
        """Empty the cache unless its vectors were computed from the weights `key` names."""
        if self.key is None or self.key != key:
            self.clear()
            self.key = key

    def clear(self) -> None:
        """Forget every vector (e.g. after the weights changed); preloaded words stay
        preloaded, recomputed when next met."""
        self._vectors.clear()
        self._bytes = 0
        self._pinned.clear()
        self.boundaries = None
        self.key = None

    def pin(self, tokens: Sequence[str], vectors: torch.Tensor) -> None:
        """Preload words that are never evicted."""
        for token, vector in zip(tokens, vectors.detach()):
            self._pinned[token] = vector.clone()
            self._pinned_words.add(token)

    def lookup(self, tokens: Sequence[str]) -> Tuple[List[int], List[torch.Tensor], List[int]]:
        """(positions found, their vectors, positions missing)."""
        found, vectors, missing = [], [], []
        for i, token in enumerate(tokens):
            vector = self._pinned.get(token)
            if vector is None:
                vector = self._vectors.get(token)
                if vector is not None:
                    self._vectors.move_to_end(token)
            if vector is None:
                missing.append(i)
            else:
                found.append(i)
                vectors.append(vector)
        self.hits += len(found)
        self.misses += len(missing)
        return found, vectors, missing

    def add(self, tokens: Sequence[str], vectors: torch.Tensor) -> None:
        """Keep copies of these rows (preloaded words always, others if learning)."""
        learning = self.learn and self.max_size > 0 and self.max_bytes != 0
        for token, vector in zip(tokens, vectors.detach()):
            if token in self._pinned_words:
                self._pinned[token] = vector.clone()
            elif learning:
                old = self._vectors.pop(token, None)
                if old is not None:
                    self._bytes -= _nbytes(old)
                self._vectors[token] = vector.clone()
                self._bytes += _nbytes(vector)
        while self._vectors and (
            len(self._vectors) > self.max_size or (self.max_bytes is not None and self._bytes > self.max_bytes)
        ):
            _, old = self._vectors.popitem(last=False)
            self._bytes -= _nbytes(old)

    def stats(self) -> Dict[str, Optional[float]]:
        total = self.hits + self.misses
        return {
            "size": len(self),
            "bytes": self.nbytes,
            "hits": self.hits,
            "misses": self.misses,
            "hit_rate": (self.hits / total) if total else None,
        }


def _nbytes(vector: torch.Tensor) -> int:
    return vector.numel() * vector.element_size()


__all__ = ["TokenCache"]
