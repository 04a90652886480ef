"""Turn a stream of segments into language-model batches, deterministically.

Two modes:

* `sentences` (default): each segment is read on its own from zero state, as
  the `elmo` component reads sentences at inference. Segments are gathered in
  a shuffle buffer, sorted by length inside it, cut into batches under a token
  budget, and the batches of the buffer are shuffled.
* `stream`: bilm-tf's unrolled training. `batch_size` parallel streams of
  sentences (each "<S> w1 .. wn </S>") are cut into windows of `unroll_steps`
  tokens; the LSTM state is carried from one window to the next. The backward
  LM reads its own streams, made of the same sentences each reversed.

Both depend only on (seed, epoch): a resumed run skips the batches it already
did and sees exactly the batches an uninterrupted run would have seen.
"""
import random
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional

import numpy

from ..bilm.language_model import LMBatch, sentence_batch
from ..bilm.vocab import BOS_TOKEN, EOS_TOKEN, Vocabulary


def sentence_batches(
    segments: Iterable[List[str]],
    vocab: Vocabulary,
    batch_tokens: int,
    seed: int,
    buffer_batches: int = 64,
    max_batch_segments: int = 512,
) -> Iterator[LMBatch]:
    rng = random.Random(seed)
    buffer: List[List[str]] = []
    budget = batch_tokens * buffer_batches
    size = 0
    for segment in segments:
        buffer.append(segment)
        size += len(segment) + 2
        if size >= budget:
            yield from _flush(buffer, vocab, batch_tokens, max_batch_segments, rng)
            buffer, size = [], 0
    if buffer:
        yield from _flush(buffer, vocab, batch_tokens, max_batch_segments, rng)


def _flush(buffer: List[List[str]], vocab: Vocabulary, batch_tokens: int, max_batch_segments: int,
           rng: random.Random) -> Iterator[LMBatch]:
    from ..bilm.model import length_sorted_batches

    rng.shuffle(buffer)
    groups = list(length_sorted_batches([len(s) for s in buffer], batch_tokens, max_batch_segments))
    rng.shuffle(groups)
    for group in groups:
        yield sentence_batch([buffer[i] for i in group], vocab)


def stream_batches(
    make_segments: Callable[[], Iterable[List[str]]],
    vocab: Vocabulary,
    batch_size: int,
    unroll_steps: int,
) -> Iterator[LMBatch]:
    """Windows of `batch_size` parallel token streams, one stream set per direction.

    `make_segments` is called twice: each direction reads the whole corpus
    (the backward one with every sentence reversed). Row r of every batch
    continues row r of the previous batch, for both directions, so the
    trainer may carry each row's LSTM state along. The iteration ends when
    any stream runs dry.
    """
    forward_source, backward_source = iter(make_segments()), iter(make_segments())
    forward = [_Stream(forward_source, reverse=False) for _ in range(batch_size)]
    backward = [_Stream(backward_source, reverse=True) for _ in range(batch_size)]
    while True:
        rows_f: List[Any] = [s.take(unroll_steps + 1) for s in forward]  # None (a dry stream) ends it below
        rows_b: List[Any] = [s.take(unroll_steps + 1) for s in backward]
        if any(r is None for r in rows_f + rows_b):
            return
        table: Dict[str, int] = {}
        index = numpy.zeros((2, batch_size, unroll_steps), dtype=numpy.int64)
        targets = numpy.zeros((2, batch_size, unroll_steps), dtype=numpy.int64)
        for direction, rows in enumerate((rows_f, rows_b)):
            for b, row in enumerate(rows):
                index[direction, b] = [_slot(t, table) for t in row[:-1]]
                targets[direction, b] = vocab.encode(row[1:])
        yield LMBatch(list(table), index, targets, [unroll_steps] * batch_size)


def _slot(token: str, table: Dict[str, int]) -> int:
    if token == BOS_TOKEN:
        return 0
    if token == EOS_TOKEN:
        return 1
    return table.setdefault(token, len(table) + 2)


class _Stream:
    """Tokens of consecutive sentences; windows overlap by one token (the next input)."""

    def __init__(self, segments: Iterator[List[str]], reverse: bool) -> None:
        self.segments = segments
        self.reverse = reverse
        self.buffer: List[str] = []

    def take(self, n: int) -> Optional[List[str]]:
        while len(self.buffer) < n:
            segment = next(self.segments, None)
            if segment is None:
                return None
            tokens = [BOS_TOKEN] + segment + [EOS_TOKEN]
            self.buffer.extend(tokens[::-1] if self.reverse else tokens)
        window = self.buffer[:n]
        self.buffer = self.buffer[n - 1 :]
        return window


def shuffled(segments: Iterable[List[str]], seed: int, buffer_size: int = 20_000) -> Iterator[List[str]]:
    """A seeded buffer shuffle: bounded memory, the same order for the same seed."""
    rng = random.Random(seed)
    buffer: List[List[str]] = []
    for segment in segments:
        buffer.append(segment)
        if len(buffer) >= buffer_size:
            rng.shuffle(buffer)
            yield from buffer
            buffer = []
    rng.shuffle(buffer)
    yield from buffer


def skip(batches: Iterator[LMBatch], n: int) -> Iterator[LMBatch]:
    """Drop the first n batches (resuming mid-epoch)."""
    for _ in range(n):
        if next(batches, None) is None:
            break
    return batches


__all__ = ["sentence_batches", "stream_batches", "shuffled", "skip"]
