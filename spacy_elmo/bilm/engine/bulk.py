"""Bulk inference: many sentences through a biLM (or scored by its LM), batched by length, without gradients.

Sentences are sorted by length and cut into batches under a token budget
(`length_sorted_batches`): per timestep the LSTM multiplies one row per
sentence, so more sentences per batch mean taller, more efficient products,
while the budget bounds a batch's memory. A sentence that occurs more than
once is computed once. In float32 none of this changes a bit of the result:
a sentence's layers do not depend on its batch (engine/product_rows.py).
Under a bfloat16 or float16 autocast the products are torch's, whose
rounding may depend on the batch's size (a step of that precision).
"""
import os
import threading
import weakref
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Sequence, Tuple

import numpy
import torch

from ..layout import CheckedSentences, check_sentences

if TYPE_CHECKING:
    from ..language_model import LanguageModel
    from ..model import BiLM

# 8k tokens / 512 sentences per batch: a bounded peak memory and tall products
# (benchmarks/RESULTS.md has the batch sizes measured)
EMBED_BATCH_TOKENS = 8192
EMBED_BATCH_SENTENCES = 512

PRECISIONS = {"float32": None, "float16": torch.float16, "bfloat16": torch.bfloat16}


def embed(
    bilm: "BiLM",
    sentences: Iterable[Sequence[str]],
    batch_tokens: int = EMBED_BATCH_TOKENS,
    max_batch_sentences: int = EMBED_BATCH_SENTENCES,
    precision: str = "float32",
) -> List[numpy.ndarray]:
    """(L+1, n_tokens, width) float32 arrays, in input order (see `BiLM.embed`)."""
    sentences = check_sentences(sentences)  # a generator is read once, here (its length is needed below)
    results: Dict[int, numpy.ndarray] = {}
    for indices, output in embed_batches(bilm, sentences, batch_tokens, max_batch_sentences, precision):
        results.update(zip(indices, output))
    return [results[i] for i in range(len(sentences))]


# modules in eval mode for calls under way: [calls, the mode before the first], so that threads
# sharing a model leave it in the caller's mode (each restored the mode the one before it had set)
_MODE_LOCK = threading.Lock()
_MODE_CALLS: "weakref.WeakKeyDictionary[torch.nn.Module, List[Any]]" = weakref.WeakKeyDictionary()


def _no_calls_after_fork() -> None:
    """In a forked child: the parent's calls under way do not run there, so their modules get their
    mode back now and nothing counts (locks held by the parent's other threads would stay held)."""
    global _MODE_LOCK, _MODE_CALLS
    calls, _MODE_LOCK, _MODE_CALLS = _MODE_CALLS, threading.Lock(), weakref.WeakKeyDictionary()
    for module, (_, mode, restore) in list(calls.items()):
        restore(module, mode)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_no_calls_after_fork)


@contextmanager
def evaluating(module: torch.nn.Module, restore: Callable[[torch.nn.Module, bool], Any] = torch.nn.Module.train
               ) -> Iterator[None]:
    """Run the block with `module` in eval mode, and put back the mode it had before, through
    `restore(module, mode)`, once the last of the calls running on it at once has ended."""
    with _MODE_LOCK:
        calls = _MODE_CALLS.get(module)
        if calls is None:
            calls = _MODE_CALLS[module] = [0, module.training, restore]
        calls[0] += 1
        module.eval()
    try:
        yield
    finally:
        with _MODE_LOCK:
            calls[0] -= 1
            if calls[0] == 0:
                # gone already where the garbage collector cleared the weak key before this generator's
                # finally ran (a suspended generator in a reference cycle with the model)
                _MODE_CALLS.pop(module, None)
                restore(module, calls[1])


def embed_batches(
    bilm: "BiLM",
    sentences: Sequence[Sequence[str]],
    batch_tokens: int = EMBED_BATCH_TOKENS,
    max_batch_sentences: int = EMBED_BATCH_SENTENCES,
    precision: str = "float32",
) -> Iterator[Tuple[List[int], List[numpy.ndarray]]]:
    """(input positions, arrays) one batch at a time (see `BiLM.embed_batches`)."""
    if bilm.stateful:
        raise ValueError("embed() sorts sentences, which stateful mode forbids; call forward() in order")
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, got {precision!r}")
    sentences = check_sentences(sentences)
    empty = numpy.zeros((bilm.n_layers, 0, bilm.width), dtype=numpy.float32)
    empties = [i for i, s in enumerate(sentences) if not len(s)]
    if empties:
        yield empties, [empty.copy() for _ in empties]
    occurrences: Dict[Tuple[str, ...], List[int]] = {}
    for i, sentence in enumerate(sentences):
        if len(sentence):
            occurrences.setdefault(tuple(sentence), []).append(i)
    distinct = list(occurrences.values())
    lengths = [len(sentences[d[0]]) for d in distinct]
    dtype = PRECISIONS[precision]
    # the mode put back as it was, not through BiLM.train, which clears the caches for weights about to
    # change: embedding changed none, and a fine-tuned biLM since frozen (left in train mode by thinc's
    # shim) lost its token and doc caches on every call
    with evaluating(bilm, restore=torch.nn.Module.train):
        for batch in length_sorted_batches(lengths, batch_tokens, max_batch_sentences):
            # no_grad and autocast only around the biLM, not across the yield: the caller's loop body
            # (training another model on the arrays, say) ran without gradients and under autocast, and
            # two generators left suspended ended those regions out of order, leaving gradients off
            # ("float32" turns autocast off, also inside a caller's autocast region)
            with torch.no_grad(), torch.autocast(bilm.device.type, dtype=dtype, enabled=dtype is not None):
                output = bilm(CheckedSentences(sentences[distinct[k][0]] for k in batch))
                layers = output.layers.float().cpu().numpy()
            indices, arrays = [], []
            for row, (k, n) in enumerate(zip(batch, output.lengths.tolist())):
                array = numpy.ascontiguousarray(layers[:, row, :n])
                for j, i in enumerate(distinct[k]):
                    indices.append(i)
                    arrays.append(array if j == 0 else array.copy())
            yield indices, arrays


def length_sorted_batches(lengths: Sequence[int], batch_tokens: int, max_batch_sentences: int) -> Iterable[List[int]]:
    """Positions grouped into batches of similar length under a padded token budget."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batch: List[int] = []
    longest = 0
    for i in order:
        n = lengths[i] + 2
        longest_if_added = max(longest, n)
        if batch and (longest_if_added * (len(batch) + 1) > batch_tokens or len(batch) >= max_batch_sentences):
            yield batch
            batch, longest_if_added = [], n
        batch.append(i)
        longest = longest_if_added
    if batch:
        yield batch


def perplexity(lm: "LanguageModel", sentences: Sequence[Sequence[str]], batch_tokens: int = 4096) -> Dict[str, float]:
    """Forward, backward and mean perplexity of whole sentences (exact softmax; see `LanguageModel.perplexity`)."""
    from ..language_model import sentence_batch  # the language model imports this module

    totals, count = numpy.zeros(2), 0
    with evaluating(lm, restore=lambda module, mode: module.train(mode)), torch.no_grad():
        for positions in length_sorted_batches([len(s) for s in sentences], batch_tokens, 512):
            losses, counts, _ = lm(sentence_batch([sentences[i] for i in positions], lm.vocab), exact=True)
            totals += losses.double().cpu().numpy()
            count += int(counts[0])
    if count == 0:
        return {"forward": float("nan"), "backward": float("nan"), "mean": float("nan"), "tokens": 0}
    forward, backward = numpy.exp(totals / count)
    mean = numpy.exp(totals.sum() / (2 * count))
    return {"forward": float(forward), "backward": float(backward), "mean": float(mean), "tokens": int(count)}


__all__ = ["EMBED_BATCH_SENTENCES", "EMBED_BATCH_TOKENS", "embed", "embed_batches", "length_sorted_batches",
           "perplexity"]
