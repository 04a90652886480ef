import numpy
import torch

from spacy_elmo.bilm import TokenCache
from tests.bilm.word_tables import layers, table_bilm


def test_cached_equals_uncached(allennlp_bilm, ewt_sentences):
    sentences = ewt_sentences[:50]
    plain = allennlp_bilm.embed(sentences)
    allennlp_bilm.enable_cache(max_size=1000, words=["the", "a", "of"])
    first = allennlp_bilm.embed(sentences)
    second = allennlp_bilm.embed(sentences)  # now mostly from the cache
    stats = allennlp_bilm.token_cache.stats()
    assert stats["hits"] > 0 and stats["size"] <= 1003
    for a, b, c in zip(plain, first, second):
        numpy.testing.assert_allclose(a, b, atol=1e-6)
        numpy.testing.assert_allclose(a, c, atol=1e-6)


def test_unknown_words_use_the_char_cnn_not_a_shared_vector(allennlp_bilm):
    allennlp_bilm.enable_cache(max_size=0, words=["known"])
    with torch.no_grad():
        out = allennlp_bilm.encode_tokens(["known", "unseenA", "unseenB"])
    assert not torch.allclose(out[3], out[4])
    assert len(allennlp_bilm.token_cache) == 1  # max_size 0: nothing learned


def test_lru_bound_and_clear_on_train(allennlp_bilm):
    cache = allennlp_bilm.enable_cache(max_size=3)
    with torch.no_grad():
        allennlp_bilm.encode_tokens(["a", "b", "c", "d", "e"])
    assert len(cache) == 3 and "e" in cache and "a" not in cache
    allennlp_bilm.train()
    assert len(cache) == 0
    allennlp_bilm.eval()


def test_cache_serves_eval_mode_only_and_eval_records_no_gradients(allennlp_bilm):
    allennlp_bilm.enable_cache(max_size=10)
    out = allennlp_bilm.encode_tokens(["x", "y"])  # eval mode, autograd enabled
    assert not out.requires_grad and len(allennlp_bilm.token_cache) == 2
    allennlp_bilm.train()
    try:
        out = allennlp_bilm.encode_tokens(["x", "z"])
        assert out.requires_grad and len(allennlp_bilm.token_cache) == 0  # train() cleared it; nothing added
    finally:
        allennlp_bilm.eval()


def test_token_cache_lookup_api():
    cache = TokenCache(max_size=2)
    cache.add(["a", "b"], torch.ones(2, 3))
    found, vectors, missing = cache.lookup(["a", "z", "b"])
    assert found == [0, 2] and missing == [1] and len(vectors) == 2


def test_token_cache_gives_the_same_bits():
    bilm = table_bilm()
    plain = layers(bilm)
    bilm.enable_cache(words=["bank"])
    cached_first, cached_again = layers(bilm), layers(bilm)
    for a, b, c in zip(plain, cached_first, cached_again):
        numpy.testing.assert_array_equal(a, b)
        numpy.testing.assert_array_equal(a, c)
