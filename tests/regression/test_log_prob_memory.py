"""Regression: exact log-probs built one (rows, vocabulary) logit matrix at once.

`perplexity` on a 50k-word vocabulary and a long file asked for gigabytes in
one allocation; the head now works in row chunks. The chunked result must
equal the one-shot log-softmax, across chunk borders and for an empty batch.
"""
import torch

from spacy_elmo.bilm.language_model import SoftmaxHead


def test_chunked_log_prob_equals_one_shot_log_softmax():
    n_vocab = 1 << 16  # 64 rows per chunk
    head = SoftmaxHead(n_vocab, 8, kind="full")
    head.reset_parameters(torch.Generator().manual_seed(0))
    hidden = torch.randn(200, 8, generator=torch.Generator().manual_seed(1))
    targets = torch.randint(0, n_vocab, (200,), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        got = head.log_prob(hidden, targets)
        logits = hidden @ head.weight.t() + head.bias
        expected = logits.log_softmax(-1).gather(1, targets[:, None]).squeeze(1)
    assert got.shape == (200,)
    assert torch.allclose(got, expected, atol=1e-5)
    assert head.log_prob(hidden[:0], targets[:0]).shape == (0,)
