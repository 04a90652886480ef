"""What a pretraining run trains with: the language model, the optimizer, the learning-rate
schedule, the precision."""
import math
from contextlib import nullcontext
from typing import Any, ContextManager, Iterable, List, Optional

import torch
from confection import Config

from ..bilm.config import BiLMConfig, OptionsError
from ..bilm.language_model import LanguageModel, SoftmaxHead
from ..bilm.model import BiLM
from ..bilm.vocab import SPECIAL_TOKENS, Vocabulary, WordTableVocabulary
from .settings import SettingsError

LARGEST_VOCAB = 1_000_000
"""More words than a run's softmax has (the adaptive one's clusters grow with them, up to three)."""


def build_language_model(
    config: Config,
    vocab: Vocabulary,
    seed: int,
    word_table_vocab: Optional[WordTableVocabulary] = None,
    word_table_dim: int = 0,
) -> LanguageModel:
    """A biLM of `[model]`'s architecture with `[softmax]`'s head, randomly initialised from `seed`.

    `word_table_vocab`, `word_table_dim`: a word table in the token layer (its sizes come
    from the table, not from `[model]`); its pretrained rows are left for the caller to
    fill (`BiLM.set_word_table`, or a checkpoint's or start model's weights).
    """
    bilm_config = model_config(config, len(vocab), word_table_vocab, word_table_dim)
    bilm = BiLM(
        bilm_config,
        vocab=vocab if not bilm_config.use_character_inputs else None,
        boundary_strings=config["training"]["mode"] == "stream",
        word_table_vocab=word_table_vocab,
    )
    bilm.reset_parameters(seed)
    softmax = config["softmax"]
    head = SoftmaxHead(len(vocab), bilm_config.projection_dim, softmax["kind"], softmax["n_samples"])
    head.reset_parameters(torch.Generator().manual_seed(seed + 1))
    return LanguageModel(bilm, vocab, head)


def model_config(
    config: Config, n_vocab: int, word_table_vocab: Optional[WordTableVocabulary] = None, word_table_dim: int = 0
) -> BiLMConfig:
    """`[model]` as the BiLMConfig of a run with `n_vocab` words and that word table (None: none)."""
    model_cfg = dict(config["model"])
    model_cfg["filters"] = [tuple(f) for f in model_cfg["filters"]]
    if not model_cfg.get("use_character_inputs", True):
        model_cfg["n_tokens_vocab"] = n_vocab
    trainable = bool(model_cfg.pop("word_table_trainable", False))
    if word_table_vocab is not None:
        model_cfg.update(
            word_table_rows=word_table_vocab.n_rows,
            word_table_dim=word_table_dim,
            word_table_specials=len(word_table_vocab.specials),
            word_table_trainable=trainable,
        )
    elif trainable:
        raise SettingsError("[model] word_table_trainable = true, but there is no word table ([paths] word_table)")
    try:
        bilm_config = BiLMConfig(**model_cfg)
    except (TypeError, OptionsError) as err:
        raise SettingsError(f"[model]: {err}") from None
    return bilm_config


def parameter_names_of(config: Config) -> List[str]:
    """The parameter names a language model of this config can have, known before the corpus is read
    (`[training] frozen` is checked against them first): built on the meta device (no memory, no
    initialisation) with a word table wherever the model can have one and a softmax over more words
    than any run's, so that every name a run's model gets is among them (whether there is a table,
    and the adaptive softmax's last clusters, are decided by the data or the init_from model)."""
    characters = bool(config["model"].get("use_character_inputs", True))
    table = WordTableVocabulary(["a"]) if characters else None
    words = Vocabulary(SPECIAL_TOKENS)
    with torch.device("meta"):
        bilm_config = model_config(config, len(words), table, 1 if table else 0)
        bilm = BiLM(bilm_config, vocab=None if characters else words, word_table_vocab=table)
        softmax = config["softmax"]
        head = SoftmaxHead(LARGEST_VOCAB, bilm_config.projection_dim, softmax["kind"], softmax["n_samples"])
    return [f"bilm.{name}" for name, _ in bilm.named_parameters()] + [
        f"head.{name}" for name, _ in head.named_parameters()]


def init_softmax_from_table(
    head: SoftmaxHead, vocab: Vocabulary, table_vocab: WordTableVocabulary, vectors: torch.Tensor, seed: int
) -> int:
    """Start the softmax's output embeddings from a word table; returns how many words it had.

    Each vocabulary word the table has (looked up as the table keys words, e.g.
    lower-cased) gets its vector through one fixed random map with orthonormal
    columns (rows, where the table is wider than the softmax), scaled to the
    norm of a random start row (`SoftmaxHead.reset_parameters`), so
    words with similar vectors start with similar output embeddings. The rest
    keep their random start; the biases are untouched.
    """
    if head.kind == "adaptive":
        raise SettingsError("[paths] softmax_init: the adaptive softmax has no single embedding table to start")
    dim, width = head.dim, int(vectors.shape[1])
    generator = torch.Generator().manual_seed(seed + 2)
    basis, _ = torch.linalg.qr(torch.randn(max(dim, width), min(dim, width), generator=generator))
    rotation = basis if dim >= width else basis.T  # (dim, width)
    ids = torch.tensor(table_vocab.encode(vocab.words), dtype=torch.long)
    found = ids < table_vocab.n_rows
    rows = torch.nn.functional.normalize(vectors[ids[found]].float() @ rotation.T, dim=1)
    with torch.no_grad():
        head.weight[found] = rows.to(head.weight.dtype)  # unit rows: a random start row's norm is about 1
    return int(found.sum())


def build_optimizer(config: Config, params: Iterable[torch.nn.Parameter]) -> torch.optim.Optimizer:
    training = config["training"]
    lr = training["learning_rate"]
    if training["optimizer"] == "adagrad":
        # bilm-tf: tf.train.AdagradOptimizer(lr, initial_accumulator_value=1.0)
        return torch.optim.Adagrad(params, lr=lr, initial_accumulator_value=1.0)
    if training["optimizer"] == "adam":
        return torch.optim.Adam(params, lr=lr)
    return torch.optim.SGD(params, lr=lr)


def learning_rate(config: Config, step: int) -> float:
    """The rate at `step`: linear warmup, then constant, linear decay or cosine to max_steps."""
    training = config["training"]
    base = training["learning_rate"]
    warmup = training["warmup_steps"]
    if warmup and step < warmup:
        return base * (step + 1) / warmup
    total = training["max_steps"]
    if training["schedule"] == "constant" or not total:
        return base
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    if training["schedule"] == "linear":
        return base * (1.0 - progress)
    return base * 0.5 * (1.0 + math.cos(math.pi * progress))


def native_cpu_bfloat16() -> bool:
    """Whether this CPU computes bfloat16 products in hardware (AVX-512 with BF16, or AMX), by
    oneDNN's own check. Elsewhere PyTorch emulates them, many times slower than float32
    (benchmarks/RESULTS.md, "Pretraining throughput", has the rates)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a build without oneDNN
        return False


def training_autocast(precision: str, device: torch.device) -> ContextManager[Any]:
    """The autocast the training steps run under, for `[training] precision`.

    float32: none. On CUDA: autocast to bfloat16 or float16. On a CPU: bfloat16
    autocast where the CPU computes it natively; otherwise (and for float16,
    which CPUs do not compute natively) a warning and float32, since emulated
    products would make the run many times slower. The weights stay float32.
    On CUDA the products autocast keeps in float32 (the LSTM's recurrence,
    the sampled softmax) run on TF32 tensor cores when the run asked for
    reduced precision, which accepts TF32's 10-bit mantissa there, and a
    float32 run turns TF32 off. These are torch's process-wide flags: they
    hold for everything the process computes on CUDA until the next run
    sets them (a float32 teacher in a bfloat16 run uses TF32 too).
    """
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = precision != "float32"
        torch.backends.cudnn.allow_tf32 = precision != "float32"
    if precision == "float32":
        return nullcontext()
    if device.type == "cuda":
        return torch.autocast(device_type="cuda", dtype=getattr(torch, precision))
    if device.type == "cpu" and precision == "bfloat16" and native_cpu_bfloat16():
        return torch.autocast(device_type="cpu", dtype=torch.bfloat16)
    from wasabi import msg

    msg.warn(f"[training] precision = {precision!r}: this {device.type} does not compute {precision} natively "
             "(emulated products run many times slower), so training runs in float32")
    return nullcontext()


__all__ = [
    "build_language_model", "build_optimizer", "init_softmax_from_table", "learning_rate", "native_cpu_bfloat16",
    "training_autocast",
]
