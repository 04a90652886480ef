"""The bidirectional language model: token encoder + forward/backward LSTM stacks.

    sentences (lists of strings)
      -> distinct tokens of the batch -> token encoder (char CNN or words) -> x_k
      -> [<S>, x_1..x_n, </S>] forward, and reversed within its length backward
      -> L projected LSTM layers per direction                         -> h_k,j
      -> (L+1, n, 2 * projection_dim) per sentence, layer 0 = [x_k; x_k]

Every sentence starts from zero state unless `stateful` is set, so a token's
vectors never depend on which sentences share its batch. `stateful = True`
carries each batch row's final state into the next call, as the reference
implementations did; it exists for parity with them.
"""
from dataclasses import dataclass
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy
import torch
from torch import nn

from .cache import TokenCache
from .char_ids import CharIdEncoder
from .config import BiLMConfig
from .lstm import BiLSTMStack, LSTMState
from .token_encoder import CharCNNEncoder, WordEncoder
from .vocab import Vocabulary
from .weights_key import WeightsKey, weights_key


# Bulk embedding batches: per timestep the LSTM multiplies one row per sentence,
# so more sentences per batch mean larger, more efficient products. 8k tokens /
# 512 sentences was ~10% faster than 4k / 256 for `embed` on 2 CPU threads, as
# fast as 16k / 512, and keeps the peak memory of a batch's outputs low
# (benchmarks/RESULTS.md).
EMBED_BATCH_TOKENS = 8192
EMBED_BATCH_SENTENCES = 512


@dataclass
class BiLMOutput:
    """Output of one batch.

    layers: (L+1, batch, time, width); time = longest sentence (+2 with
        boundaries kept); zeros past each row's length.
    lengths: (batch,) number of positions of each row in `layers`.
    """

    layers: torch.Tensor
    lengths: torch.Tensor

    def mask(self) -> torch.Tensor:
        time = self.layers.shape[2]
        return torch.arange(time, device=self.lengths.device)[None, :] < self.lengths[:, None]

    def unpadded(self) -> List[torch.Tensor]:
        """Per row: (L+1, length, width)."""
        return [self.layers[:, i, :n] for i, n in enumerate(self.lengths.tolist())]


class BiLM(nn.Module):
    """ELMo's biLM. `forward` takes sentences as lists of token strings."""

    def __init__(
        self, config: BiLMConfig, vocab: Optional[Vocabulary] = None, boundary_strings: bool = False
    ) -> None:
        """`boundary_strings`: treat the literal tokens "<S>" and "</S>" as sentence
        boundaries, as the reference did (default: ordinary tokens)."""
        super().__init__()
        self.config = config
        self.boundary_strings = boundary_strings
        if config.use_character_inputs:
            self.token_encoder: nn.Module = CharCNNEncoder(config)
            self.char_encoder = CharIdEncoder(config.max_characters_per_token, boundary_strings=boundary_strings)
        else:
            if vocab is None or len(vocab) != config.n_tokens_vocab:
                raise ValueError(
                    "a word-input biLM needs its vocabulary of n_tokens_vocab="
                    f"{config.n_tokens_vocab} words, got {None if vocab is None else len(vocab)}"
                )
            self.token_encoder = WordEncoder(config)
        self.input_vocab = vocab if not config.use_character_inputs else None
        self.lstm = BiLSTMStack(config)
        self.token_cache: Optional[TokenCache] = None
        self.stateful = False
        self._carried: Optional[LSTMState] = None
        # the LSTM state after <S> / </S> from zeros, keyed on the weights (weights_key.py)
        self._start: Optional[Tuple[WeightsKey, LSTMState]] = None

    # -- setup -------------------------------------------------------------------------
    def reset_parameters(self, seed: Optional[int] = None) -> None:
        """Random initialisation for training from scratch."""
        generator = torch.Generator().manual_seed(seed) if seed is not None else None
        self.token_encoder.reset_parameters(generator)
        self.lstm.reset_parameters(generator)
        self.clear_cache()

    @property
    def width(self) -> int:
        return self.config.width

    @property
    def n_layers(self) -> int:
        """L + 1 output layers."""
        return self.config.n_output_layers

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def enable_cache(
        self, max_size: int = 50_000, words: Optional[Sequence[str]] = None, max_bytes: Optional[int] = None
    ) -> TokenCache:
        """Reuse token-encoder outputs across batches (inference only).

        `words` are computed now and kept; others are learned as they come,
        up to `max_size` entries (0: only the given words) and `max_bytes`.
        Every call checks the cache against the weights (`weights_key.py`), so
        changed weights never meet vectors computed from the old ones.
        """
        self.token_cache = TokenCache(max_size=max_size, learn=max_size > 0, max_bytes=max_bytes)
        self.token_cache.validate(weights_key(self))
        if words:
            words = list(dict.fromkeys(words))
            with torch.no_grad():
                for start in range(0, len(words), 4096):
                    chunk = words[start : start + 4096]
                    self.token_cache.pin(chunk, self._encode_uncached(chunk, with_boundaries=False))
        return self.token_cache

    def disable_cache(self) -> None:
        self.token_cache = None

    def clear_cache(self) -> None:
        """Forget computed token vectors, the LSTM's start state and its kept
        inference weights. Every call checks them against the weights anyway
        (`weights_key.py`); this frees their memory, and is needed only after
        writes through `parameter.data`, which no version counter sees."""
        self._start = None
        self.lstm.clear_inference_cache()
        if self.token_cache is not None:
            self.token_cache.clear()

    def train(self, mode: bool = True) -> "BiLM":
        if mode:
            self.clear_cache()  # weights are about to change
        return super().train(mode)

    def reset_states(self) -> None:
        """Forget the carried-over state of `stateful` mode."""
        self._carried = None

    # -- the token encoder -----------------------------------------------------------
    def _encode_uncached(self, tokens: Sequence[str], with_boundaries: bool) -> torch.Tensor:
        """Vectors for [<S>, </S>] + tokens (or tokens alone)."""
        device = self.device
        if self.config.use_character_inputs:
            ids = self.char_encoder.encode(tokens)
            if not with_boundaries:
                ids = ids[2:]
            return self.token_encoder(torch.from_numpy(ids).to(device))
        vocab = self.input_vocab
        ids = ([vocab.bos, vocab.eos] if with_boundaries else []) + vocab.encode(tokens)
        return self.token_encoder(torch.tensor(ids, dtype=torch.long, device=device))

    def encode_tokens(self, tokens: Sequence[str]) -> torch.Tensor:
        """Context-free vectors (n, projection_dim) of distinct tokens, boundaries first.

        Row 0 is <S>, row 1 is </S>, row 2 + i is tokens[i].
        """
        cache = self.token_cache
        if cache is None or self.training or torch.is_grad_enabled():
            return self._encode_uncached(tokens, with_boundaries=True)
        cache.validate(weights_key(self))
        found, vectors, missing = cache.lookup(tokens)
        # <S>/</S> are computed alone, once, and kept, like every cached token:
        # the same bits whatever batch or history (see the regression test
        # tests/regression/test_batch_invariance.py)
        if cache.boundaries is None:
            cache.boundaries = self._encode_uncached([], with_boundaries=True).detach()
        boundaries = cache.boundaries
        if missing:
            missing_tokens = [tokens[i] for i in missing]
            computed = self._encode_uncached(missing_tokens, with_boundaries=False)
            cache.add(missing_tokens, computed)
        if not found:
            return torch.cat([boundaries, computed]) if missing else boundaries.clone()
        out = boundaries.new_empty((len(tokens) + 2, boundaries.shape[1]))
        out[:2] = boundaries
        device = out.device
        if missing:
            out[torch.tensor(missing, device=device) + 2] = computed
        out[torch.tensor(found, device=device) + 2] = torch.stack(vectors).to(device=device, dtype=out.dtype)
        return out

    # -- the model -------------------------------------------------------------------
    def forward(
        self,
        sentences: Sequence[Sequence[str]],
        keep_boundaries: bool = False,
        state: Optional[LSTMState] = None,
    ) -> BiLMOutput:
        """All layers for a batch of tokenized sentences.

        `state` is the initial LSTM state per row; by default zeros, or in
        `stateful` mode the state each row ended the previous call with.
        """
        if not keep_boundaries and state is None and not self.stateful and not torch.is_grad_enabled():
            return self._forward_tokens_only(sentences)
        tokens, index, lengths_list = _index_rows(sentences, with_boundaries=True)
        time = index.shape[2]
        inputs, outputs, _ = self.run(tokens, index, lengths_list, state)
        stacked = _stack_layers(inputs, outputs, lengths_list)
        lengths = torch.tensor(lengths_list, dtype=torch.long)
        device = inputs.device
        if keep_boundaries:
            return BiLMOutput(stacked, lengths.to(device))
        inner = lengths - 2
        inner_mask = (torch.arange(time - 2)[None, :] < inner[:, None]).to(device)
        stacked = stacked[:, :, 1:-1] * inner_mask[None, :, :, None].to(stacked.dtype)
        return BiLMOutput(stacked, inner.to(device))

    def _forward_tokens_only(self, sentences: Sequence[Sequence[str]]) -> BiLMOutput:
        """Inference from the zero state, boundaries dropped: the same bits, two steps fewer per row.

        Every row's first step reads <S> (forward) or </S> (backward) from the
        zero state, so the state after it is the same for all rows: it is
        computed once, alone, and every row starts from it. The last step
        reads the other boundary, whose outputs are dropped: it is not run.
        For EWT's sentences (15 tokens on average) that is 12% of the LSTMs'
        work. The products' rows do not depend on their height (see
        `lstm.py`), so the numbers are those of the full run, bit for bit.
        """
        tokens, index, lengths_list = _index_rows(sentences, with_boundaries=False)
        token_vectors = self.encode_tokens(tokens)
        device = token_vectors.device
        start = self._start_state(token_vectors).select(torch.zeros(len(sentences), dtype=torch.long, device=device))
        index_t = torch.from_numpy(index).to(device)
        inputs = token_vectors[index_t]
        outputs, _ = self.lstm(
            inputs, torch.tensor(lengths_list, dtype=torch.long), start, token_rows=(token_vectors, index_t), shared_start=True
        )
        stacked = _stack_layers(inputs, outputs, lengths_list)
        return BiLMOutput(stacked, torch.tensor(lengths_list, dtype=torch.long, device=device))

    def _start_state(self, token_vectors: torch.Tensor) -> LSTMState:
        """The state after the first step (<S> forward, </S> backward) from zeros, one row.

        Kept until a weight changes or the precision does (`weights_key.py`).
        """
        key = weights_key(self, token_vectors.dtype, token_vectors.device)
        if self._start is None or self._start[0] != key:
            index = torch.tensor([[[0]], [[1]]], device=token_vectors.device)
            boundaries = token_vectors[:2]  # the table rows it reads; not the batch's whole table
            _, start = self.lstm(boundaries[index], torch.tensor([1]), token_rows=(boundaries, index))
            self._start = (key, start)
        return self._start[1]

    def run(
        self,
        tokens: Sequence[str],
        index: numpy.ndarray,
        lengths: Sequence[int],
        state: Optional[LSTMState] = None,
    ) -> Tuple[torch.Tensor, List[torch.Tensor], LSTMState]:
        """The LSTMs over rows given as indices into a token table.

        tokens: the distinct tokens; index value 0 is <S>, 1 is </S>, 2 + i is
            tokens[i].
        index: (2, batch, time): direction 0 in reading order, direction 1 in
            its own processing order (for sentences, each row reversed).
        Returns the token vectors (2, batch, time, dim), each layer's output
        in processing order, and every row's final state. Language-model
        training uses this directly, with a different input per direction.
        """
        token_vectors = self.encode_tokens(list(tokens))
        index_t = torch.from_numpy(numpy.ascontiguousarray(index)).to(token_vectors.device)
        inputs = token_vectors[index_t]
        if state is None and self.stateful:
            state = self._carried_state(index.shape[1], inputs)
        lengths_t = torch.tensor(list(lengths), dtype=torch.long)
        outputs, final = self.lstm(inputs, lengths_t, state, token_rows=(token_vectors, index_t))
        if self.stateful:
            self._carry(final)
        return inputs, outputs, final

    def _carried_state(self, batch: int, like: torch.Tensor) -> LSTMState:
        zeros = self.lstm.zero_state(batch, like)
        if self._carried is None:
            return zeros
        n = min(batch, self._carried.h[0].shape[1])
        h = tuple(torch.cat([old[:, :n].to(like), new[:, n:]], dim=1) for old, new in zip(self._carried.h, zeros.h))
        c = tuple(torch.cat([old[:, :n].to(like), new[:, n:]], dim=1) for old, new in zip(self._carried.c, zeros.c))
        return LSTMState(h, c)

    def _carry(self, final: LSTMState) -> None:
        final = final.detach()
        old = self._carried
        if old is not None and old.h[0].shape[1] > final.h[0].shape[1]:
            # rows beyond this batch keep their previous state
            n = final.h[0].shape[1]
            final = LSTMState(
                tuple(torch.cat([f, o[:, n:]], dim=1) for f, o in zip(final.h, old.h)),
                tuple(torch.cat([f, o[:, n:]], dim=1) for f, o in zip(final.c, old.c)),
            )
        self._carried = final

    # -- bulk inference ----------------------------------------------------------------
    def embed(
        self,
        sentences: Sequence[Sequence[str]],
        batch_tokens: int = EMBED_BATCH_TOKENS,
        max_batch_sentences: int = EMBED_BATCH_SENTENCES,
        precision: str = "float32",
    ) -> List[numpy.ndarray]:
        """(L+1, n_tokens, width) float32 arrays, in input order, without grad.

        Sentences are sorted by length and batched by a token budget; the
        result does not depend on the batching (default, non-stateful mode).
        """
        results: List[Optional[numpy.ndarray]] = [None] * len(sentences)
        for indices, output in self.embed_batches(sentences, batch_tokens, max_batch_sentences, precision):
            for i, layers in zip(indices, output):
                results[i] = layers
        return results  # type: ignore[return-value]

    def embed_batches(
        self,
        sentences: Sequence[Sequence[str]],
        batch_tokens: int = EMBED_BATCH_TOKENS,
        max_batch_sentences: int = EMBED_BATCH_SENTENCES,
        precision: str = "float32",
    ) -> Iterator[Tuple[List[int], List[numpy.ndarray]]]:
        """Like `embed`, yielding (input positions, arrays) one batch at a time.

        A sentence that occurs more than once is computed once (its layers do
        not depend on the batch, so every occurrence gets the same numbers);
        each occurrence gets its own array.
        """
        if self.stateful:
            raise ValueError("embed() sorts sentences, which stateful mode forbids; call forward() in order")
        empty = numpy.zeros((self.n_layers, 0, self.width), dtype=numpy.float32)
        empties = [i for i, s in enumerate(sentences) if not len(s)]
        if empties:
            yield empties, [empty.copy() for _ in empties]
        occurrences: Dict[Tuple[str, ...], List[int]] = {}
        for i, sentence in enumerate(sentences):
            if len(sentence):
                occurrences.setdefault(tuple(sentence), []).append(i)
        distinct = list(occurrences.values())
        was_training = self.training
        self.eval()
        try:
            with torch.no_grad(), _autocast(self.device, precision):
                for batch in length_sorted_batches([len(sentences[d[0]]) for d in distinct], batch_tokens, max_batch_sentences):
                    output = self.forward([sentences[distinct[k][0]] for k in batch])
                    layers = output.layers.float().cpu().numpy()
                    indices, arrays = [], []
                    for row, (k, n) in enumerate(zip(batch, output.lengths.tolist())):
                        array = numpy.ascontiguousarray(layers[:, row, :n])
                        for j, i in enumerate(distinct[k]):
                            indices.append(i)
                            arrays.append(array if j == 0 else array.copy())
                    yield indices, arrays
        finally:
            self.train(was_training)


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


def _index_rows(sentences: Sequence[Sequence[str]], with_boundaries: bool) -> Tuple[List[str], numpy.ndarray, List[int]]:
    """The distinct tokens, the (2, batch, time) index and each row's length, for `run`.

    Index value 0 is <S>, 1 is </S>, 2 + i is tokens[i]; direction 0 reads a
    row in order, direction 1 reversed within its length; with boundaries a
    row is <S>, its tokens, </S>.
    """
    vocab: Dict[str, int] = {}
    rows = [[vocab.setdefault(t, len(vocab) + 2) for t in s] for s in sentences]
    if with_boundaries:
        rows = [[0] + r + [1] for r in rows]
    lengths = [len(r) for r in rows]
    index = numpy.zeros((2, len(rows), max(lengths, default=2 if with_boundaries else 0)), dtype=numpy.int64)
    for b, r in enumerate(rows):
        index[0, b, : len(r)] = r
        index[1, b, : len(r)] = r[::-1]
    return list(vocab), index, lengths


def _stack_layers(inputs: torch.Tensor, outputs: List[torch.Tensor], lengths: Sequence[int]) -> torch.Tensor:
    """(L+1, batch, time, width) in reading order from processing-order LSTM outputs.

    Layer 0 is the token vector twice (masked past each row's length); the
    backward direction's outputs are reversed within each row.
    """
    _, batch, time, P = inputs.shape
    device = inputs.device
    mask = torch.arange(time)[None, :] < torch.tensor(list(lengths), dtype=torch.long)[:, None]
    reverse = _reverse_index(lengths, time).to(device)[..., None].expand(-1, -1, P)
    # written into one (L+1, batch, time, 2P) tensor (slice assignments, which
    # autograd follows): no per-layer cat and stack
    layers = inputs.new_empty((len(outputs) + 1, batch, time, 2 * P))
    layers[0, ..., :P] = inputs[0] * mask.to(device)[..., None].to(inputs.dtype)
    layers[0, ..., P:] = layers[0, ..., :P]
    for i, out in enumerate(outputs, 1):
        layers[i, ..., :P] = out[0]
        layers[i, ..., P:] = out[1].gather(1, reverse)
    return layers


def _reverse_index(lengths: Sequence[int], time: int) -> torch.Tensor:
    """index[b, t] = length_b - 1 - t within the row, t past it (an involution)."""
    index = numpy.tile(numpy.arange(time), (len(lengths), 1))
    for b, n in enumerate(lengths):
        index[b, :n] = numpy.arange(n - 1, -1, -1)
    return torch.from_numpy(index)


class _autocast:
    """Mixed precision on request; a no-op for float32."""

    def __init__(self, device: torch.device, precision: str) -> None:
        dtypes = {"float32": None, "float16": torch.float16, "bfloat16": torch.bfloat16}
        if precision not in dtypes:
            raise ValueError(f"precision must be one of {sorted(dtypes)}, got {precision!r}")
        self.context = (
            torch.autocast(device_type=device.type, dtype=dtypes[precision]) if dtypes[precision] else None
        )

    def __enter__(self) -> None:
        if self.context is not None:
            self.context.__enter__()

    def __exit__(self, *exc) -> None:
        if self.context is not None:
            self.context.__exit__(*exc)


__all__ = ["BiLM", "BiLMOutput", "length_sorted_batches"]
