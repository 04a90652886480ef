"""A bounded cache of context-free token vectors.

The token encoder is a pure function of the token's characters, so its output
can be reused across batches. Words can be preloaded from a list (the
reference's `vocab_to_cache`), or learned on the fly up to `max_size` entries
and `max_bytes` bytes (least recently used are evicted first). Unlike the
reference, a word missing from the cache is not mapped to a shared "unknown"
vector: it is computed by the character CNN, so cached and uncached results
are equal.

The vectors hold for the weights they were computed from: the owner checks
the cache against the weights' key (`validate`) on every call. The key also
names the autocast state, which is per thread: one model may serve a thread
in float32 and another in bfloat16 at once, so the cache keeps the entries
of up to `MAX_KEYS` keys side by side (least recently used dropped first),
and `validate` returns the entries of its key, which the caller passes on to
`lookup` and `add` (another thread's `validate` cannot swap them). A key of
other weights (a changed or replaced weight) drops the entries of every
other key. `lock` (re-entrant) guards every change; the owner holds it
around `validate` and `lookup`, once per batch, and computes the missing
vectors outside it.

Each entry is a copy of its row, never a view into a batch's tensor, so the
cache holds the memory it counts: a learned entry costs its vector's bytes,
plus its key's where the token is longer than `FREE_KEY_CHARS` characters
(a shorter key costs a fraction of a vector, left out so that `bytes` is the
vectors' for ordinary words). Tokens longer than `MAX_LEARNED_TOKEN_CHARS`
are not learned, only computed (with the same bits).
"""
import sys
import threading
from collections import OrderedDict
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple, TypeVar

import torch

from .weights_key import WeightsKey

MAX_KEYS = 4  # precisions (autocast states) of the same weights kept side by side
FREE_KEY_CHARS = 64  # keys up to this long are not counted in the bytes
MAX_LEARNED_TOKEN_CHARS = 1024

Kept = TypeVar("Kept")


def find_key(kept: List[Kept], key: WeightsKey, key_of: Callable[[Kept], Optional[WeightsKey]]) -> Optional[Kept]:
    """The value kept for `key` in `kept` (least recently used first), moved last; None if there is none.

    The bookkeeping of every cache kept per key (the token cache's entries, `BiLM._start`):
    the caller holds the cache's lock."""
    for i in range(len(kept) - 1, -1, -1):
        found = kept[i]
        found_key = key_of(found)
        if found_key is not None and found_key == key:
            if i != len(kept) - 1:
                kept.append(kept.pop(i))
            return found
    return None


def keep_key(kept: List[Kept], key: WeightsKey, key_of: Callable[[Kept], Optional[WeightsKey]],
             new: Kept) -> List[Kept]:
    """`kept` with `new` (the value of `key`, not in it) added last: values of other weights dropped,
    those of the same weights in other precisions kept, up to `MAX_KEYS` in all."""
    same_weights = [k for k in kept if (found := key_of(k)) is not None and found.same_weights(key) and found != key]
    return same_weights[-(MAX_KEYS - 1):] + [new] if MAX_KEYS > 1 else [new]


class CacheLock:
    """A re-entrant lock that copies and pickles as a fresh, unlocked one."""

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        self._lock = threading.RLock()

    def __enter__(self) -> bool:
        return self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    def acquire(self, blocking: bool = True) -> bool:
        return self._lock.acquire(blocking)

    def release(self) -> None:
        self._lock.release()

    def __reduce__(self) -> Tuple[Callable[[], "CacheLock"], Tuple[()]]:
        return (CacheLock, ())


class KeyEntries:
    """The vectors computed under one weights key (a precision of the weights)."""

    __slots__ = ("key", "vectors", "bytes", "pinned", "boundaries")

    def __init__(self, key: Optional[WeightsKey]) -> None:
        self.key = key
        self.vectors: "OrderedDict[str, torch.Tensor]" = OrderedDict()  # learned, least recently used first
        self.bytes = 0  # of the learned vectors (and their long keys: `_entry_bytes`)
        self.pinned: Dict[str, torch.Tensor] = {}
        # <S> and </S>: computed once, so that no batch sees other bits for them
        self.boundaries: Optional[torch.Tensor] = None


class TokenCache:
    def __init__(self, max_size: int = 50_000, learn: bool = True, max_bytes: Optional[int] = None) -> None:
        if max_size < 0:
            raise ValueError("max_size must be >= 0")
        if max_bytes is not None and max_bytes < 0:
            raise ValueError("max_bytes must be >= 0 (or None: bounded by max_size alone)")
        self.max_size = max_size
        self.max_bytes = max_bytes
        self.learn = learn
        self.lock = CacheLock()
        self._pinned_words: Set[str] = set()  # kept whatever the bounds; recomputed after a weight change
        self._entries: List[KeyEntries] = [KeyEntries(None)]  # least recently validated first
        self.hits = 0
        self.misses = 0

    def __reduce__(self) -> Tuple[Callable[..., "TokenCache"], Tuple[Any, ...]]:
        """A copy or pickle is an empty cache of the same bounds and preloaded words (recomputed when
        next met), as after `clear`: its entries hold for weights keys that match nothing in the copy,
        and walking them without the lock raced a thread predicting with the model."""
        with self.lock:
            pinned = sorted(self._pinned_words)
        return (_empty_cache, (self.max_size, self.learn, self.max_bytes, pinned))

    @property
    def current(self) -> KeyEntries:
        """The entries of the key last validated (what `lookup`, `add` and `in` use by default)."""
        return self._entries[-1]

    @property
    def key(self) -> Optional[WeightsKey]:
        return self.current.key

    @property
    def boundaries(self) -> Optional[torch.Tensor]:
        return self.current.boundaries

    @boundaries.setter
    def boundaries(self, value: Optional[torch.Tensor]) -> None:
        self.current.boundaries = value

    def __len__(self) -> int:
        return sum(len(e.vectors) + len(e.pinned) for e in self._entries)

    def __contains__(self, token: str) -> bool:
        entries = self.current
        return token in entries.pinned or token in entries.vectors

    @property
    def nbytes(self) -> int:
        """Bytes held by the cached vectors (learned and preloaded, of every key) and the learned long keys."""
        with self.lock:
            return sum(e.bytes + sum(_nbytes(v) for v in e.pinned.values()) for e in self._entries)

    def validate(self, key: WeightsKey) -> KeyEntries:
        """The entries computed from the weights `key` names (new, empty ones if none); entries of
        other weights are dropped, those of the same weights in another precision kept."""
        with self.lock:
            found = find_key(self._entries, key, _key_of_entries)
            if found is not None:
                return found
            new = KeyEntries(key)
            self._entries = keep_key(self._entries, key, _key_of_entries, new)
            return new

    def clear(self) -> None:
        """Forget every vector (e.g. after the weights changed); preloaded words stay
        preloaded, recomputed when next met."""
        with self.lock:
            self._entries = [KeyEntries(None)]

    def pin(self, tokens: Sequence[str], vectors: torch.Tensor, entries: Optional[KeyEntries] = None) -> None:
        """Preload words that are never evicted."""
        with self.lock:
            entries = self.current if entries is None else entries
            for token, vector in zip(tokens, vectors.detach()):
                entries.pinned[token] = vector.clone()
                self._pinned_words.add(token)

    def lookup(
        self, tokens: Sequence[str], entries: Optional[KeyEntries] = None
    ) -> Tuple[List[int], List[torch.Tensor], List[int]]:
        """(positions found, their vectors, positions missing), in `entries` (by default the current key's)."""
        found, vectors, missing = [], [], []
        with self.lock:
            entries = self.current if entries is None else entries
            pinned, learned = entries.pinned, entries.vectors
            for i, token in enumerate(tokens):
                vector = pinned.get(token)
                if vector is None:
                    vector = learned.get(token)
                    if vector is not None:
                        learned.move_to_end(token)
                if vector is None:
                    missing.append(i)
                else:
                    found.append(i)
                    vectors.append(vector)
            self.hits += len(found)
            self.misses += len(missing)
        return found, vectors, missing

    def add(self, tokens: Sequence[str], vectors: torch.Tensor, entries: Optional[KeyEntries] = None) -> None:
        """Keep copies of these rows (preloaded words always, others if learning) in `entries` (by default
        the current key's; entries dropped meanwhile keep nothing)."""
        learning = self.learn and self.max_size > 0 and self.max_bytes != 0
        copies = [(token, vector.clone()) for token, vector in zip(tokens, vectors.detach())
                  if token in self._pinned_words or (learning and len(token) <= MAX_LEARNED_TOKEN_CHARS)]
        with self.lock:
            entries = self.current if entries is None else entries
            if not any(e is entries for e in self._entries):
                return
            for token, vector in copies:
                if token in self._pinned_words:
                    entries.pinned[token] = vector
                    continue
                old = entries.vectors.pop(token, None)
                if old is not None:
                    entries.bytes -= _entry_bytes(token, old)
                entries.vectors[token] = vector
                entries.bytes += _entry_bytes(token, vector)
            self._evict()

    def _evict(self) -> None:
        """Learned vectors beyond the bounds (counted over every key), least recently used key first."""
        count = sum(len(e.vectors) for e in self._entries)
        held = sum(e.bytes for e in self._entries)
        for entries in self._entries:
            learned = entries.vectors
            while learned and (count > self.max_size or (self.max_bytes is not None and held > self.max_bytes)):
                token, old = learned.popitem(last=False)
                size = _entry_bytes(token, old)
                entries.bytes -= size
                count -= 1
                held -= size

    def stats(self) -> Dict[str, Optional[float]]:
        with self.lock:
            total = self.hits + self.misses
            return {
                "size": len(self),
                "bytes": self.nbytes,
                "hits": self.hits,
                "misses": self.misses,
                "hit_rate": (self.hits / total) if total else None,
            }


def _empty_cache(max_size: int, learn: bool, max_bytes: Optional[int], pinned_words: List[str]) -> TokenCache:
    cache = TokenCache(max_size, learn, max_bytes)
    cache._pinned_words.update(pinned_words)
    return cache


def _key_of_entries(entries: KeyEntries) -> Optional[WeightsKey]:
    return entries.key


def _nbytes(vector: torch.Tensor) -> int:
    return vector.numel() * vector.element_size()


def _entry_bytes(token: str, vector: torch.Tensor) -> int:
    """What a learned entry counts: its vector, and its key where that is long."""
    return _nbytes(vector) + (sys.getsizeof(token) if len(token) > FREE_KEY_CHARS else 0)


__all__ = ["CacheLock", "FREE_KEY_CHARS", "KeyEntries", "MAX_KEYS", "MAX_LEARNED_TOKEN_CHARS", "TokenCache", "find_key",
           "keep_key"]
