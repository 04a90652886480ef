"""ELMo for plain PyTorch models: a biLM with task-specific scalar mixes, as AllenNLP's `Elmo` module.

The paper's equation (1): ELMo_k^task = gamma^task * sum_j s_j^task * h_{k,j}, with s the softmax of
learned scalars, one set per place the task uses ELMo (its input, its output: paper section 3.3),
and dropout on the result (AllenNLP's default 0.5). spaCy pipelines get the same from the `elmo`
component and its listeners (layers/); this module serves a PyTorch model with no spaCy around it:

    elmo = ElmoModule(load_bilm(), num_output_representations=2)
    out = elmo([["She", "sat", "on", "the", "bank"], ["It", "rose"]])
    out["elmo_representations"][0].shape   # (2, 5, width): batch, time, width
    out["mask"]                             # (2, 5) booleans

The biLM is frozen by default (`requires_grad=False`: it runs in eval mode without autograd, and
only the mixes train); `requires_grad=True` fine-tunes it with the task.
"""
from typing import Dict, List, Optional, Sequence, Union

import torch

from .layout import BiLMOutput
from .model import BiLM


class TorchScalarMix(torch.nn.Module):
    """gamma * sum_j softmax(s)_j * layer_j over `n_layers` layers (L+1: the token layer and each LSTM).

    `do_layer_norm`: normalise each layer over its real (unmasked) positions first, as AllenNLP's
    option of the same name. `initial`: the scalars s to start from (all zero: the layers' mean);
    with `trainable=False` they and gamma stay fixed (e.g. [1, -inf, -inf] would pick layer 0)."""

    def __init__(self, n_layers: int, do_layer_norm: bool = False, initial: Optional[Sequence[float]] = None,
                 trainable: bool = True) -> None:
        super().__init__()
        if n_layers < 1:
            raise ValueError(f"TorchScalarMix: n_layers must be >= 1, got {n_layers}")
        if initial is not None and len(initial) != n_layers:
            raise ValueError(f"TorchScalarMix: {len(initial)} initial scalars for {n_layers} layers")
        scalars = torch.tensor([float(v) for v in initial] if initial is not None else [0.0] * n_layers)
        self.scalar_parameters = torch.nn.Parameter(scalars, requires_grad=trainable)
        self.gamma = torch.nn.Parameter(torch.tensor(1.0), requires_grad=trainable)
        self.do_layer_norm = do_layer_norm

    def forward(self, layers: Union[torch.Tensor, Sequence[torch.Tensor]],
                mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        """(n_layers, ...) -> (...): the layers stacked on a first axis, or a list of them (as AllenNLP's
        ScalarMix takes). `mask` (batch, time) is needed with `do_layer_norm`, whose layers are
        (n_layers, batch, time, width): padding must not count in a layer's mean and variance."""
        if not isinstance(layers, torch.Tensor):
            layers = torch.stack(list(layers))
        if layers.shape[0] != self.scalar_parameters.shape[0]:
            raise ValueError(f"TorchScalarMix: {layers.shape[0]} layers given to a mix of "
                             f"{self.scalar_parameters.shape[0]}")
        weights = torch.softmax(self.scalar_parameters, dim=0).to(layers.dtype)
        if self.do_layer_norm:
            if mask is None:
                raise ValueError("TorchScalarMix: do_layer_norm needs the mask of the real positions")
            layers = _masked_layer_norm(layers, mask)
        return self.gamma * (weights.reshape(-1, *[1] * (layers.dim() - 1)) * layers).sum(dim=0)


def _masked_layer_norm(layers: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Each layer minus its mean over the real positions, divided by its standard deviation there."""
    keep = mask.to(layers.dtype)[None, :, :, None]  # (1, batch, time, 1)
    count = keep.sum() * layers.shape[-1]
    mean = (layers * keep).sum(dim=(1, 2, 3), keepdim=True) / count
    variance = (((layers - mean) * keep) ** 2).sum(dim=(1, 2, 3), keepdim=True) / count
    return (layers - mean) / torch.sqrt(variance + 1e-12)


class ElmoModule(torch.nn.Module):
    """A biLM and `num_output_representations` scalar mixes of its layers, each followed by dropout.

    bilm: a loaded `BiLM` (`spacy_elmo.load_bilm(...)`: the embedded model, a published one, a
        directory or URL). requires_grad: fine-tune the biLM too (False: frozen, in eval mode).
    dropout: on each mixed representation, in training mode only (AllenNLP's default 0.5).
    keep_sentence_boundaries: include the <S> and </S> positions (time axis + 2, as AllenNLP's).
    scalar_mix_parameters: fixed scalars for every mix instead of learned ones (AllenNLP's option).
    """

    def __init__(self, bilm: BiLM, num_output_representations: int = 1, requires_grad: bool = False,
                 do_layer_norm: bool = False, dropout: float = 0.5, keep_sentence_boundaries: bool = False,
                 scalar_mix_parameters: Optional[Sequence[float]] = None) -> None:
        super().__init__()
        if num_output_representations < 1:
            raise ValueError(f"ElmoModule: num_output_representations must be >= 1, got {num_output_representations}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"ElmoModule: dropout must be in [0, 1), got {dropout}")
        self.bilm = bilm
        self.requires_grad = requires_grad
        frozen_table = getattr(bilm.token_encoder, "word_table", None) if not bilm.config.word_table_trainable else None
        for parameter in bilm.parameters():  # a pretrained word table the config freezes stays frozen
            parameter.requires_grad_(requires_grad and parameter is not frozen_table)
        trainable = scalar_mix_parameters is None
        self.scalar_mixes = torch.nn.ModuleList(
            TorchScalarMix(bilm.n_layers, do_layer_norm, scalar_mix_parameters, trainable)
            for _ in range(num_output_representations)
        )
        self.dropout = torch.nn.Dropout(dropout)
        self.keep_sentence_boundaries = keep_sentence_boundaries
        self.train(self.training)

    def train(self, mode: bool = True) -> "ElmoModule":
        """Train mode for the mixes' dropout; the biLM follows only when it is fine-tuned (a frozen biLM
        stays in eval mode: no dropout inside it, no autograd)."""
        super().train(mode)
        self.bilm.train(mode and self.requires_grad)
        return self

    def get_output_dim(self) -> int:
        """The width of each representation."""
        return self.bilm.width

    def forward(self, sentences: Sequence[Sequence[str]]) -> Dict[str, Union[List[torch.Tensor], torch.Tensor]]:
        """{"elmo_representations": num_output_representations tensors (batch, time, width), zero past
        each sentence's length, "mask": (batch, time) booleans, True at real tokens}.

        With `do_layer_norm` the layers are normalised over the tokens and the sentence boundaries
        (as AllenNLP mixes before it removes the boundaries), whether or not the boundaries are kept."""
        with_boundaries = self.keep_sentence_boundaries or any(mix.do_layer_norm for mix in self.scalar_mixes)
        output = self.bilm(sentences, keep_boundaries=with_boundaries)
        mask = output.mask()  # with the boundaries, their positions count as real
        keep = mask.unsqueeze(-1).to(output.layers.dtype)
        # the mixes stacked as layers of an output, so that its boundaries come off as the biLM's do
        mixed = BiLMOutput(torch.stack([mix(output.layers, mask) * keep for mix in self.scalar_mixes]),
                           output.lengths)
        if with_boundaries and not self.keep_sentence_boundaries:
            mixed = mixed.without_boundaries()
        return {"elmo_representations": [self.dropout(m) for m in mixed.layers], "mask": mixed.mask()}


__all__ = ["ElmoModule", "TorchScalarMix"]
