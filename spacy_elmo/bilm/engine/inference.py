"""The biLM's inference shortcuts: the token cache and the boundary steps computed once.

`enable_cache` gives the biLM a token cache (`token_cache.py`), with words
computed in advance where given. The two shortcuts give the bits of the plain
computation (eval-mode `BiLM.forward` with the boundaries kept), with less work:

* `encode_tokens`: tokens already in the biLM's token cache are copied from
  it, only the others go through the token encoder. `<S>` and `</S>` are
  computed alone, once, and kept like every cached token, so their vectors
  never depend on the batch or the history.
* `forward_tokens_only`: from the zero state every row's first step reads
  `<S>` (forward) or `</S>` (backward), so the state after it is the same for
  all rows: it is computed once, alone, from the boundaries' vectors computed
  alone too (`start_state`, kept per precision until a weight or the backend
  changes), and every row starts from it. The
  last step reads the other boundary, whose outputs are dropped: it is not
  run. A row's numbers do not depend on the other rows of its products
  (product_rows.py), so they are those of the full run, bit for bit.

One model may be shared by threads, each in its own precision (autocast is
per thread): both caches keep each precision's values apart, take them under
a lock once per batch, and compute outside it.
"""
from typing import TYPE_CHECKING, Optional, Sequence, Tuple

import torch

from ..layout import BOS_ROW, EOS_ROW, BiLMOutput, index_rows, stack_layers
from ..lstm import LSTMState, TokenRows
from .token_cache import TokenCache, find_key, keep_key
from .weights_key import WeightsKey, weights_key

if TYPE_CHECKING:
    from ..model import BiLM


def enable_cache(bilm: "BiLM", max_size: int, words: Optional[Sequence[str]], max_bytes: Optional[int]) -> TokenCache:
    """A token cache for `bilm` (see `BiLM.enable_cache`), `words` computed now and pinned.

    The cache serves eval mode only, so the words are computed in eval mode (the bits eval
    mode computes uncached), whatever mode the biLM is in; its mode is restored after."""
    cache = TokenCache(max_size=max_size, learn=max_size > 0, max_bytes=max_bytes)
    words = list(dict.fromkeys(words or []))
    was_training = bilm.training
    if was_training:
        torch.nn.Module.train(bilm, False)  # BiLM.train clears caches on the way back; this does not
    try:
        with torch.no_grad():
            entries = cache.validate(weights_key(bilm, bilm.backend))
            for start in range(0, len(words), 4096):
                chunk = words[start : start + 4096]
                cache.pin(chunk, bilm.encode_uncached(chunk, with_boundaries=False), entries)
    finally:
        if was_training:
            torch.nn.Module.train(bilm, True)
    bilm.token_cache = cache
    return cache


def encode_tokens(bilm: "BiLM", tokens: Sequence[str]) -> torch.Tensor:
    """`BiLM.encode_tokens` in eval mode: [<S>, </S>] + tokens, through the token cache where there is one.

    The cache's entries for this call's key are taken once, under the cache's lock, and used
    throughout: another thread (another precision) never swaps them in between."""
    cache = bilm.token_cache
    if cache is None:
        return bilm.encode_uncached(tokens, with_boundaries=True)
    key = weights_key(bilm, bilm.backend)
    with cache.lock:
        entries = cache.validate(key)
        found, vectors, missing = cache.lookup(tokens, entries)
        boundaries = entries.boundaries
    if boundaries is None:
        boundaries = bilm.encode_uncached([], with_boundaries=True).detach()
        with cache.lock:
            if entries.boundaries is None:
                entries.boundaries = boundaries
            boundaries = entries.boundaries
    if missing:
        missing_tokens = [tokens[i] for i in missing]
        computed = bilm.encode_uncached(missing_tokens, with_boundaries=False)
        cache.add(missing_tokens, computed, entries)
    if not found:
        return torch.cat([boundaries, computed]) if missing else boundaries.clone()
    out = boundaries.new_empty((len(tokens) + 2, boundaries.shape[1]))
    out[:2] = boundaries
    device = out.device
    if missing:
        out[torch.tensor(missing, device=device) + 2] = computed
    out[torch.tensor(found, device=device) + 2] = torch.stack(vectors).to(device=device, dtype=out.dtype)
    return out


def forward_tokens_only(bilm: "BiLM", sentences: Sequence[Sequence[str]]) -> BiLMOutput:
    """Eval-mode `BiLM.forward` from the zero state, boundaries dropped (see the module docstring)."""
    tokens, index, lengths = index_rows(sentences, with_boundaries=False)
    token_vectors = bilm.encode_tokens(tokens)
    device = token_vectors.device
    start = start_state(bilm, token_vectors).select(torch.zeros(len(sentences), dtype=torch.long, device=device))
    rows = TokenRows(token_vectors, torch.from_numpy(index).to(device))
    outputs, _ = bilm.lstm(rows, lengths, start)
    stacked = stack_layers(token_vectors[rows.index[0]], outputs, lengths)
    return BiLMOutput(stacked, torch.tensor(lengths, dtype=torch.long, device=device))


def start_state(bilm: "BiLM", like: torch.Tensor) -> LSTMState:
    """The state after the first step (<S> forward, </S> backward) from zeros, one row, for token
    vectors like `like` (its dtype and device).

    It reads the boundaries' vectors computed alone (`encode_tokens([])`: through the token cache,
    which computes them alone too, where there is one), never a batch's: under `int8`, whose
    products depend on their other rows, a batch's would make every later call depend on the
    batch that came first. On the exact backends both are the same bits (product_rows.py).

    Kept in `bilm._start`, a list of (key, state), least recently used first: up to
    `MAX_KEYS` precisions of the same weights side by side (threads may embed a model in
    different precisions at once); a key of other weights drops the others (`token_cache.keep_key`,
    as the token cache's entries). Read and updated under `bilm.cache_lock`, computed outside it."""
    key = weights_key(bilm, like.dtype, like.device, bilm.backend)
    with bilm.cache_lock:
        found = find_key(bilm._start or [], key, _key_of_start)
    if found is not None:
        return found[1]
    boundaries = bilm.encode_tokens([])
    index = torch.tensor([[[BOS_ROW]], [[EOS_ROW]]], device=boundaries.device)
    _, state = bilm.lstm(TokenRows(boundaries, index), [1])
    with bilm.cache_lock:
        kept = bilm._start or []
        found = find_key(kept, key, _key_of_start)  # another thread's, computed meanwhile: the same bits
        if found is not None:
            return found[1]
        bilm._start = keep_key(kept, key, _key_of_start, (key, state))
    return state


def _key_of_start(kept: Tuple[WeightsKey, LSTMState]) -> WeightsKey:
    return kept[0]


__all__ = ["encode_tokens", "forward_tokens_only", "start_state"]
