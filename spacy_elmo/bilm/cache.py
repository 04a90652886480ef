"""A bounded cache of context-free token vectors.

The token encoder is a pure function of the token's characters, so its output
can be reused across batches. Words can be preloaded from a list (the
reference's `vocab_to_cache`), or learned on the fly up to `max_size` entries
(least recently used are evicted first). Unlike the reference, a word missing
from the cache is not mapped to a shared "unknown" vector: it is computed by
the character CNN, so cached and uncached results are equal.
"""
from collections import OrderedDict
from typing import Dict, List, Optional, Sequence, Tuple

import torch


class TokenCache:
    def __init__(self, max_size: int = 50_000, learn: bool = True) -> None:
        if max_size < 0:
            raise ValueError("max_size must be >= 0")
        self.max_size = max_size
        self.learn = learn
        self._vectors: "OrderedDict[str, torch.Tensor]" = OrderedDict()
        self._pinned: Dict[str, torch.Tensor] = {}
        # <S> and </S>: computed once, so that no batch sees other bits for them
        self.boundaries: Optional[torch.Tensor] = None
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._vectors) + len(self._pinned)

    def __contains__(self, token: str) -> bool:
        return token in self._pinned or token in self._vectors

    def clear(self) -> None:
        """Forget everything, preloaded words included (e.g. after the weights changed)."""
        self._vectors.clear()
        self._pinned.clear()
        self.boundaries = None

    def pin(self, tokens: Sequence[str], vectors: torch.Tensor) -> None:
        """Preload words that are never evicted."""
        for token, vector in zip(tokens, vectors.detach()):
            self._pinned[token] = vector

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
        if not self.learn or self.max_size == 0:
            return
        for token, vector in zip(tokens, vectors.detach()):
            self._vectors[token] = vector
        while len(self._vectors) > self.max_size:
            self._vectors.popitem(last=False)

    def stats(self) -> Dict[str, Optional[float]]:
        total = self.hits + self.misses
        return {
            "size": len(self),
            "hits": self.hits,
            "misses": self.misses,
            "hit_rate": (self.hits / total) if total else None,
        }


__all__ = ["TokenCache"]
