"""The layers of docs already seen in training, kept while the biLM is frozen.

A frozen biLM gives a doc the same layers in every epoch, so the component
computes them once and reuses them. The cache is keyed on the biLM's input
(the doc's words and their grouping into segments), checked against the
biLM's weights on every use (`bind`: other weights, or the same ones changed
in place, empty it), and bounded in bytes:
a doc's layers take (L+1) * n_tokens * width * 4 bytes, which for the
published 1024-wide model is 12 kB per token.
"""
from collections import OrderedDict
from typing import Any, Callable, Optional, Tuple

import numpy

from ..defaults import DOC_CACHE_BYTES as DEFAULT_MAX_BYTES


class DocCache:
    """Least-recently-used store of per-doc layer arrays, at most `max_bytes` in total (0: off)."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes < 0:
            raise ValueError(f"doc cache size must be >= 0 bytes, got {max_bytes}")
        self.max_bytes = int(max_bytes)
        self._data: "OrderedDict[tuple, numpy.ndarray]" = OrderedDict()
        self._bytes = 0
        self._weights: Optional[Any] = None  # the key of the weights the layers came from

    def bind(self, weights: Any) -> None:
        """Use the cache for layers of these weights (a `WeightsKey`): if they are not
        the ones its layers came from, forget those layers."""
        if self._weights is None or self._weights != weights:
            self.clear()
            self._weights = weights

    def forget_unless(self, weights: Any) -> None:
        """At prediction: forget the layers, and the key, of weights other than these (a biLM replaced
        by from_bytes or from_disk, whose weights the key would keep in memory), without binding."""
        if self._weights is not None and self._weights != weights:
            self.clear()

    @property
    def enabled(self) -> bool:
        return self.max_bytes > 0

    @property
    def nbytes(self) -> int:
        """Bytes held now."""
        return self._bytes

    def get(self, key: tuple) -> Optional[numpy.ndarray]:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: tuple, value: numpy.ndarray) -> None:
        """Keep `value` (not a copy); an array larger than the whole budget is not kept."""
        if key in self._data or value.nbytes > self.max_bytes:
            return
        self._data[key] = value
        self._bytes += value.nbytes
        while self._bytes > self.max_bytes:
            _, old = self._data.popitem(last=False)
            self._bytes -= old.nbytes

    def clear(self) -> None:
        """Forget every layer, and the weights they came from (their key holds the weight tensors: a
        replaced biLM's would stay in memory until the next training batch)."""
        self._data.clear()
        self._bytes = 0
        self._weights = None

    def __len__(self) -> int:
        return len(self._data)

    def __reduce__(self) -> Tuple[Callable[[int], "DocCache"], Tuple[int]]:
        # a copied or pickled model (replace_listeners, nlp.pipe's spawned workers) starts with an empty
        # cache: the layers hold for the weights' key, which matches nothing in the copy
        return (DocCache, (self.max_bytes,))


__all__ = ["DocCache", "DEFAULT_MAX_BYTES"]
