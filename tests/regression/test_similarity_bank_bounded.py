"""Regression: the similarity loss's bank (`[training.distill] loss = "similarity"`) is bounded by
`similarity_bank` occurrences, but it gave every distinct lower-cased word it ever saw an id in a
dict that was never pruned: memory grew with the corpus's vocabulary (200 batches of 1,000 new words
kept 200,000 ids beside a bank of 1,000), in every process of a long run. The bookkeeping is now
keyed by the words in the bank alone; the loss is unchanged (tests/pretrain/test_similarity.py)."""
import torch

from spacy_elmo.pretrain.similarity import SameWordSimilarity

BANK = 60


def _bookkeeping_sizes(loss):
    return {name: len(value) for name, value in vars(loss).items() if isinstance(value, (dict, set))}


def test_bookkeeping_stays_within_the_bank():
    torch.manual_seed(0)
    loss = SameWordSimilarity(bank_tokens=BANK, partners=4)
    for batch in range(40):
        words = [f"w{batch}_{i % 25}" for i in range(50)]  # 25 new words a batch, each twice
        sentences = [i // 10 for i in range(50)]
        value = loss(torch.randn(50, 8, requires_grad=True), torch.randn(50, 6), words, sentences)
        assert torch.isfinite(value)
        assert all(size <= BANK for size in _bookkeeping_sizes(loss).values()), _bookkeeping_sizes(loss)
    assert sum(len(slots) for slots in loss.slots_of.values()) == BANK
