"""The bidirectional language model: token encoder + forward/backward LSTM stacks.

    sentences (lists of strings)
      -> distinct tokens of the batch -> token encoder (char CNN [+ word table], or words) -> x_k
      -> [<S>, x_1..x_n, </S>] forward, and reversed within its length backward
      -> L projected LSTM layers per direction                         -> h_k,j
      -> (L+1, n, 2 * projection_dim) per sentence, layer 0 = [x_k; x_k]

`eval()` is inference (no gradients; the engine's fast loops, the token
cache), `train()` is training (autograd, dropout). Each sentence starts from
zero state, so its vectors never depend on its batch; `stateful = True`
carries each row's final state into the next call, as the reference did.
"""
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy
import torch
from torch import nn

from .char_ids import CharDictionary, CharIdEncoder
from .config import BiLMConfig
from .engine import AUTO, Engine, bulk, inference, make_engine
from .engine.bulk import EMBED_BATCH_SENTENCES, EMBED_BATCH_TOKENS, length_sorted_batches
from .engine.token_cache import CacheLock, TokenCache
from .engine.weights_key import WeightsKey
from .layout import BiLMOutput, index_rows, stack_layers
from .lstm import BiLSTMStack, LSTMState, TokenRows
from .token_encoder import CharCNNEncoder, WordEncoder
from .vocab import Vocabulary, WordTableVocabulary


_EAGER: Dict[str, Callable[..., BiLMOutput]] = {}


def _eager_forward() -> Callable[..., BiLMOutput]:
    """`BiLM._forward` excluded from torch.compile's tracing: it takes strings, and its engines are fused
    already (Inductor cannot lower oneDNN's own linear, failing after minutes). Made on the first compiled
    call, so that importing the package does not import torch._dynamo (1.5 s a process)."""
    if "forward" not in _EAGER:
        _EAGER["forward"] = torch.compiler.disable(BiLM._forward)
    return _EAGER["forward"]


class BiLM(nn.Module):
    """ELMo's biLM. `forward` takes sentences as lists of token strings."""

    def __init__(self, config: BiLMConfig, vocab: Optional[Vocabulary] = None, boundary_strings: bool = False,
                 backend: str = AUTO, word_table_vocab: Optional[WordTableVocabulary] = None,
                 char_dictionary: Optional[CharDictionary] = None) -> None:
        """`boundary_strings`: the literal tokens "<S>" and "</S>" are boundaries, as in the reference.
        `backend`: the engine that computes it (engine/). `word_table_vocab`, `char_dictionary`:
        the token layer's vocabularies, where the config has a word table or a character dictionary."""
        super().__init__()
        # guards the caches' updates (the start state here; the token cache has its own): threads may share the model
        self.cache_lock = CacheLock()
        # how many times clear_cache ran: caches kept outside the biLM (the pipeline's doc
        # cache) add it to their weights key, so writes the parameters' versions miss reach them
        self.cache_generation = 0
        self.config = config
        # the token layer's settings: properties, whose setters rebuild what reads them and clear the caches
        self._boundary_strings = bool(boundary_strings)
        self.token_encoder: Union[CharCNNEncoder, WordEncoder]
        self._word_table_vocab = word_table_vocab if config.has_word_table else None
        self._char_dictionary = char_dictionary if config.characters == "dictionary" else None
        self.engine: Engine = make_engine(backend)  # one, shared by the LSTMs and the token encoder
        if config.use_character_inputs:
            self._check_token_vocabularies(word_table_vocab, char_dictionary)
            self.token_encoder = CharCNNEncoder(config, self.engine)
            self._build_char_encoder()
        else:
            self._check_input_vocab(vocab)
            self.token_encoder = WordEncoder(config)
        self._input_vocab = vocab if not config.use_character_inputs else None
        self.lstm = BiLSTMStack(config, engine=self.engine)
        self.token_cache: Optional[TokenCache] = None
        self.stateful = False
        self._carried: Optional[LSTMState] = None
        # the LSTM state after <S> / </S> from zeros, per key of the weights and precision (weights_key.py,
        # engine/inference.start_state), least recently used first
        self._start: Optional[List[Tuple[WeightsKey, LSTMState]]] = None

    def _build_char_encoder(self) -> None:
        self.char_encoder = CharIdEncoder(self.config.max_characters_per_token, self._boundary_strings,
                                          self._char_dictionary)
        self.token_encoder.pad_id = self.char_encoder.pad_id

    def _check_input_vocab(self, vocab: Optional[Vocabulary]) -> None:
        config = self.config
        if vocab is None or len(vocab) != config.n_tokens_vocab:
            raise ValueError(f"a word-input biLM needs its vocabulary of n_tokens_vocab={config.n_tokens_vocab} "
                             f"words, got {None if vocab is None else len(vocab)}")

    # -- the token layer's vocabularies and settings: assigning one takes effect at once --------
    @property
    def boundary_strings(self) -> bool:
        """Whether the literal tokens "<S>" and "</S>" (a character dictionary's bos and eos) are boundaries."""
        return self._boundary_strings

    @boundary_strings.setter
    def boundary_strings(self, value: bool) -> None:
        self._boundary_strings = bool(value)
        if self.config.use_character_inputs:
            self._build_char_encoder()
        self.clear_cache()

    @property
    def word_table_vocab(self) -> Optional[WordTableVocabulary]:
        """The word table's vocabulary (None without a table); assign a new one rather than changing it."""
        return self._word_table_vocab

    @word_table_vocab.setter
    def word_table_vocab(self, vocab: Optional[WordTableVocabulary]) -> None:
        if not self.config.has_word_table:
            if vocab is not None:
                raise ValueError("this biLM has no word table: its word_table_vocab stays None")
        else:
            self._check_token_vocabularies(vocab, self._char_dictionary)
        self._word_table_vocab = vocab
        self.clear_cache()

    @property
    def char_dictionary(self) -> Optional[CharDictionary]:
        """The character dictionary (None where the model reads UTF-8 bytes); assign a new one rather than
        changing it."""
        return self._char_dictionary

    @char_dictionary.setter
    def char_dictionary(self, dictionary: Optional[CharDictionary]) -> None:
        if self.config.characters != "dictionary":
            if dictionary is not None:
                raise ValueError("this biLM reads UTF-8 bytes, not a character dictionary: its char_dictionary "
                                 "stays None")
        else:
            self._check_token_vocabularies(self._word_table_vocab, dictionary)
        self._char_dictionary = dictionary
        if self.config.use_character_inputs:
            self._build_char_encoder()
        self.clear_cache()

    @property
    def input_vocab(self) -> Optional[Vocabulary]:
        """The vocabulary of a word-input model (None for character models)."""
        return self._input_vocab

    @input_vocab.setter
    def input_vocab(self, vocab: Optional[Vocabulary]) -> None:
        if self.config.use_character_inputs:
            if vocab is not None:
                raise ValueError("a character biLM has no input vocabulary: its input_vocab stays None")
        else:
            self._check_input_vocab(vocab)
        self._input_vocab = vocab
        self.clear_cache()

    @property
    def backend(self) -> str:
        """The backend setting: "auto", "reference", "mkl", "onednn" or "onednn+kernel"."""
        return self.engine.setting

    @backend.setter
    def backend(self, name: str) -> None:
        """Make the engine that computes the model (one, shared by the LSTMs and the token encoder)."""
        self.engine = make_engine(name)
        self.lstm.engine = self.engine
        if isinstance(self.token_encoder, CharCNNEncoder):
            self.token_encoder.engine = self.engine
        self.clear_cache()  # computed values may differ in the last bits between engines

    def _check_token_vocabularies(self, words: Optional[WordTableVocabulary], chars: Optional[CharDictionary]) -> None:
        config = self.config
        found = None if words is None else (words.n_rows, len(words.specials))
        if config.has_word_table and found != (config.word_table_rows, config.word_table_specials):
            raise ValueError(f"a biLM with a word table needs its vocabulary of {config.word_table_rows} words and "
                             f"{config.word_table_specials} special rows, got {found}")
        if config.characters == "dictionary" and (chars is None or len(chars) != config.n_characters):
            raise ValueError(f"a biLM reading a character dictionary needs its {config.n_characters} entries, "
                             f"got {None if chars is None else len(chars)}")

    def set_word_table(self, vectors: torch.Tensor) -> None:
        """Fill the word table's pretrained rows (word_table_rows, word_table_dim)."""
        table = getattr(self.token_encoder, "word_table", None)
        if table is None or tuple(vectors.shape) != tuple(table.shape):
            expected = "this biLM has no word table" if table is None else f"expected shape {tuple(table.shape)}"
            raise ValueError(f"word table vectors of shape {tuple(vectors.shape)}: {expected}")
        with torch.no_grad():
            table.copy_(vectors)

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
        The cache is checked against the weights on every call (`weights_key.py`).
        """
        return inference.enable_cache(self, max_size, words, max_bytes)

    def disable_cache(self) -> None:
        self.token_cache = None

    def clear_cache(self) -> None:
        """Forget computed token vectors, the start state and the engine's kept weights (their memory;
        every call checks them against the weights, but writes through `parameter.data` go unseen).
        Counting the call in `cache_generation` tells the caches kept outside the biLM as well."""
        with self.cache_lock:
            self.cache_generation += 1
            self._start = None
            self.engine.clear()
            if self.token_cache is not None:
                self.token_cache.clear()

    def _apply(self, fn: Any, recurse: bool = True) -> "BiLM":
        """`to()`, `double()`, `cuda()` and kin: the caches go first, so that their keys (which hold
        the weights they were computed from) keep no copy of the old tensors alive; the state carried
        in `stateful` mode is converted with the weights (kept as it was, the next batch's state was
        rounded to its old dtype, or copied back from its old device, at every call)."""
        if hasattr(self, "cache_lock"):  # not while __init__ builds the modules
            self.clear_cache()
        applied = super()._apply(fn, recurse)
        carried = getattr(self, "_carried", None)
        if carried is not None:
            self._carried = LSTMState(tuple(fn(t) for t in carried.h), tuple(fn(t) for t in carried.c))
        return applied

    def train(self, mode: bool = True) -> "BiLM":
        if mode:
            self.clear_cache()  # weights are about to change
        return super().train(mode)

    def reset_states(self) -> None:
        """Forget the carried-over state of `stateful` mode."""
        self._carried = None

    # -- the token encoder -----------------------------------------------------------
    def encode_uncached(self, tokens: Sequence[str], with_boundaries: bool) -> torch.Tensor:
        """Vectors for [<S>, </S>] + tokens (or tokens alone), computed now."""
        device = self.device
        if self.config.use_character_inputs:
            ids = self.char_encoder.encode(tokens)
            if not with_boundaries:
                ids = ids[2:]
            table_ids = None
            table_vocab = self.word_table_vocab
            if table_vocab is not None:
                boundary_ids = [table_vocab.bos_id, table_vocab.eos_id] if with_boundaries else []
                token_ids = table_vocab.encode(tokens)
                if self._boundary_strings:  # literal boundaries read the boundaries' rows, as their characters do
                    names = self.char_encoder.boundary_names
                    rows = {names[0]: table_vocab.bos_id, names[1]: table_vocab.eos_id}
                    token_ids = [rows.get(token, i) for token, i in zip(tokens, token_ids)]
                table_ids = torch.tensor(boundary_ids + token_ids, dtype=torch.long, device=device)
            return self.token_encoder(torch.from_numpy(ids).to(device), table_ids)
        vocab = self._input_vocab
        assert vocab is not None  # a word-input biLM always has one (see __init__)
        word_ids = ([vocab.bos, vocab.eos] if with_boundaries else []) + vocab.encode(tokens)
        return self.token_encoder(torch.tensor(word_ids, dtype=torch.long, device=device))

    def encode_tokens(self, tokens: Sequence[str]) -> torch.Tensor:
        """Context-free vectors (2 + n, projection_dim): <S>, </S>, then tokens (eval mode: through the cache)."""
        if self.training:
            return self.encode_uncached(tokens, with_boundaries=True)
        with torch.no_grad():
            return inference.encode_tokens(self, tokens)

    # -- the model -------------------------------------------------------------------
    def forward(
        self, sentences: Sequence[Sequence[str]], keep_boundaries: bool = False, state: Optional[LSTMState] = None
    ) -> BiLMOutput:
        """All layers for a batch of tokenized sentences (without autograd in eval mode).

        `state` is the initial LSTM state per row; by default zeros, or in
        `stateful` mode the state each row ended the previous call with. Under `torch.compile` it runs
        eagerly (a graph break): the modules around it are compiled, the biLM keeps its own engines.
        """
        if torch.compiler.is_compiling():
            return _eager_forward()(self, sentences, keep_boundaries, state)
        return self._forward(sentences, keep_boundaries, state)

    def _forward(
        self, sentences: Sequence[Sequence[str]], keep_boundaries: bool, state: Optional[LSTMState]
    ) -> BiLMOutput:
        with torch.set_grad_enabled(self.training and torch.is_grad_enabled()):
            # in inference the boundary steps are computed once (their outputs are not kept)
            if not keep_boundaries and state is None and not self.stateful and not self.training:
                return inference.forward_tokens_only(self, sentences)
            tokens, index, lengths_list = index_rows(sentences, with_boundaries=True)
            rows, outputs, _ = self.run(tokens, index, lengths_list, state)
            stacked = stack_layers(rows.table[rows.index[0]], outputs, lengths_list)
            lengths = torch.tensor(lengths_list, dtype=torch.long, device=stacked.device)
            output = BiLMOutput(stacked, lengths)
            return output if keep_boundaries else output.without_boundaries()

    def run(
        self, tokens: Sequence[str], index: numpy.ndarray, lengths: Sequence[int], state: Optional[LSTMState] = None
    ) -> Tuple[TokenRows, List[torch.Tensor], LSTMState]:
        """The LSTMs over rows of a token table (without autograd in eval mode); LM training calls it directly.

        index (2, batch, time): rows of [<S>, </S>] + tokens, direction 0 in
        reading order, direction 1 in its own processing order. Returns the
        inputs, each layer's output in processing order and each row's final state.
        """
        with torch.set_grad_enabled(self.training and torch.is_grad_enabled()):
            token_vectors = self.encode_tokens(list(tokens))
            rows = TokenRows(token_vectors, torch.from_numpy(numpy.ascontiguousarray(index)).to(token_vectors.device))
            if state is None and self.stateful:
                zeros = self.lstm.zero_state(index.shape[1], token_vectors)
                carried = self._carried
                state = zeros if carried is None else carried.splice(zeros, min(index.shape[1], carried.batch))
            outputs, final = self.lstm(rows, lengths, state)
        if self.stateful:  # rows beyond this batch keep their previous state
            carried, final = self._carried, final.detach()
            self._carried = final if carried is None else final.splice(carried, final.batch)
        return rows, outputs, final

    # -- bulk inference (engine/bulk.py) ---------------------------------------------
    def embed(self, sentences: Iterable[Sequence[str]], batch_tokens: int = EMBED_BATCH_TOKENS,
              max_batch_sentences: int = EMBED_BATCH_SENTENCES, precision: str = "float32") -> List[numpy.ndarray]:
        """(L+1, n_tokens, width) float32 arrays in input order, batched by length (in float32 the result
        does not depend on the batching). precision: "float32", or "bfloat16" / "float16" autocast, whose
        products may round a sentence differently in another batch (a step of that precision)."""
        return bulk.embed(self, sentences, batch_tokens, max_batch_sentences, precision)

    def embed_batches(
        self, sentences: Sequence[Sequence[str]], batch_tokens: int = EMBED_BATCH_TOKENS,
        max_batch_sentences: int = EMBED_BATCH_SENTENCES, precision: str = "float32",
    ) -> Iterator[Tuple[List[int], List[numpy.ndarray]]]:
        """Like `embed`, yielding (input positions, arrays) per batch; a repeated sentence is computed once."""
        return bulk.embed_batches(self, sentences, batch_tokens, max_batch_sentences, precision)


__all__ = ["BiLM", "BiLMOutput", "length_sorted_batches"]
