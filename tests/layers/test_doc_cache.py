"""The doc cache: bounded in bytes, least recently used out first, off at 0."""
import numpy
import pytest

from spacy_elmo.layers import ElmoBiLM
from spacy_elmo.layers.doc_cache import DocCache


def test_doc_cache_is_bounded_in_bytes():
    assert ElmoBiLM().attrs["doc_cache"].max_bytes == 1 << 30
    cache = DocCache(max_bytes=10_000)
    arrays = [numpy.zeros((3, n, 256), dtype="float32") for n in (1, 2, 1)]  # 3, 6 and 3 kB
    for i, array in enumerate(arrays):
        cache.put(("doc", i), array)
    assert cache.nbytes <= 10_000 and cache.get(("doc", 0)) is None and len(cache) == 2
    cache.put(("big",), numpy.zeros((3, 4, 256), dtype="float32"))  # 12 kB: larger than the budget
    assert cache.get(("big",)) is None and cache.nbytes <= 10_000
    assert not DocCache(0).enabled
    with pytest.raises(ValueError, match=">= 0"):
        DocCache(-1)
