"""Stacked, projected LSTMs for both directions, run together.

Each layer is TensorFlow's `LSTMCell(num_proj=..., cell_clip=..., proj_clip=...)`
as bilm-tf used it: +1.0 added to the forget gate at run time, the cell
clipped to +-cell_clip, the output projected and clipped to +-proj_clip. Skip
connections add a layer's input to its output for every layer but the first.
Gates are stored in the order (i, f, o, j) so that the three sigmoid gates are
one contiguous slice; the published weights (order i, j, f, o) are permuted on
import and export.

Inputs are rows of a token table (`TokenRows`): position t of row b of
direction d reads `table[index[d, b, t]]`, in *processing order*: the forward
direction reads a sentence left to right, the backward direction reads its
own input, which for sentences is the row reversed within its length.

`reference_layer` below is the recurrence as written; the backend
(`backends.py`) decides what computes it: `reference` runs it as is, the
others run the fast loops of `lstm_inference.py` without gradients and the
packed training loop of `lstm_train.py` with them.
"""
from dataclasses import dataclass
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import torch
from torch import nn

from . import backends, lstm_inference, lstm_train
from .backends import AUTO, Backend
from .config import BiLMConfig
from .heights import product_rows
from .weights_key import WeightsKey

# published (TensorFlow) order i, j, f, o  ->  internal order i, f, o, j
TF_TO_INTERNAL = (0, 2, 3, 1)
INTERNAL_TO_TF = (0, 3, 1, 2)

# layers whose parameters take at most this many bytes keep their inference weights
# between calls (the small and embedded shapes; not the original 4096/512 ones)
INFERENCE_WEIGHTS_CACHED_BYTES = 64 << 20


def permute_gates(tensor: torch.Tensor, order: Sequence[int]) -> torch.Tensor:
    """Reorder the four gate blocks along the last axis."""
    blocks = tensor.chunk(4, dim=-1)
    return torch.cat([blocks[i] for i in order], dim=-1)


@dataclass(frozen=True)
class TokenRows:
    """The stack's inputs: rows of a token table.

    table (n, P): one vector per distinct token; index (2, batch, time) int64:
    the table row each position of each direction reads.
    """

    table: torch.Tensor
    index: torch.Tensor

    def gather(self) -> torch.Tensor:
        """The inputs as a dense (2, batch, time, P) tensor."""
        return self.table[self.index]

    @classmethod
    def dense(cls, inputs: torch.Tensor) -> "TokenRows":
        """Dense inputs (2, batch, time, P) as a table of every position."""
        n = inputs.shape[0] * inputs.shape[1] * inputs.shape[2]
        index = torch.arange(n, device=inputs.device).view(inputs.shape[:3])
        return cls(inputs.reshape(n, inputs.shape[3]), index)


class LSTMState(NamedTuple):
    """Per layer: h (2, batch, projection_dim) and c (2, batch, lstm_dim); axis 0 = direction."""

    h: Tuple[torch.Tensor, ...]
    c: Tuple[torch.Tensor, ...]

    def detach(self) -> "LSTMState":
        return LSTMState(tuple(t.detach() for t in self.h), tuple(t.detach() for t in self.c))

    def select(self, rows: torch.Tensor) -> "LSTMState":
        return LSTMState(tuple(t[:, rows] for t in self.h), tuple(t[:, rows] for t in self.c))


class BiLSTMStack(nn.Module):
    """L projected LSTM layers per direction, forward and backward independent."""

    def __init__(self, config: BiLMConfig, backend: str = AUTO) -> None:
        super().__init__()
        self.n_layers = config.n_layers
        self.hidden = config.lstm_dim
        self.proj = config.projection_dim
        self.cell_clip = config.cell_clip
        self.proj_clip = config.proj_clip
        self.use_skip_connections = config.use_skip_connections
        self.dropout = config.dropout
        self.backend = backends.check(backend)  # see backends.py; BiLM sets it for the whole model
        H, P = config.lstm_dim, config.projection_dim
        # axis 0 = direction (0 forward, 1 backward); gate blocks in order i, f, o, j
        self.weight_ih = nn.ParameterList([nn.Parameter(torch.zeros(2, P, 4 * H)) for _ in range(self.n_layers)])
        self.weight_hh = nn.ParameterList([nn.Parameter(torch.zeros(2, P, 4 * H)) for _ in range(self.n_layers)])
        self.bias = nn.ParameterList([nn.Parameter(torch.zeros(2, 1, 4 * H)) for _ in range(self.n_layers)])
        self.weight_proj = nn.ParameterList([nn.Parameter(torch.zeros(2, H, P)) for _ in range(self.n_layers)])
        self._kept_weights: Dict[int, Tuple[WeightsKey, lstm_inference.LayerWeights]] = {}

    def reset_parameters(self, generator: Optional[torch.Generator] = None) -> None:
        with torch.no_grad():
            for layer in range(self.n_layers):
                for weight in (self.weight_ih[layer], self.weight_hh[layer]):
                    bound = (6.0 / (weight.shape[1] + weight.shape[2])) ** 0.5
                    weight.uniform_(-bound, bound, generator=generator)
                self.bias[layer].zero_()
                bound = (6.0 / (self.hidden + self.proj)) ** 0.5
                self.weight_proj[layer].uniform_(-bound, bound, generator=generator)

    def zero_state(self, batch_size: int, like: torch.Tensor) -> LSTMState:
        h = tuple(like.new_zeros((2, batch_size, self.proj)) for _ in range(self.n_layers))
        c = tuple(like.new_zeros((2, batch_size, self.hidden)) for _ in range(self.n_layers))
        return LSTMState(h, c)

    @property
    def clips(self) -> Tuple[float, float]:
        return (self.cell_clip or 0.0, self.proj_clip or 0.0)

    def forward(
        self, rows: TokenRows, lengths: Sequence[int], state: Optional[LSTMState] = None
    ) -> Tuple[List[torch.Tensor], LSTMState]:
        """Run both directions over `rows` from `state` (default: zeros).

        lengths: each row's number of positions.
        Returns each layer's output (2, batch, time, projection_dim) in
        processing order (zeros past a row's length) and the final state of
        every row (its state after its own last step).
        """
        batch = rows.index.shape[1]
        if state is None:
            state = self.zero_state(batch, rows.table)
        lengths = [int(n) for n in lengths]
        backend = backends.select(self.backend, rows.table)
        if torch.is_grad_enabled() and not backend.reference:
            # autograd: the packed training loop, whose backward pass is written by hand
            outputs, (finals_h, finals_c) = lstm_train.run_stack(self, rows.gather(), lengths, state, backend.kernel)
            return outputs, LSTMState(tuple(finals_h), tuple(finals_c))
        # rows by decreasing length: the rows still running at a step are a prefix of the batch
        order = sorted(range(batch), key=lambda i: -lengths[i])
        if order == list(range(batch)):
            return self._layers(rows, lengths, state, backend)
        device = rows.table.device
        order_t = torch.tensor(order, device=device)
        sorted_rows = TokenRows(rows.table, rows.index[:, order_t.to(rows.index.device)])
        outputs, final = self._layers(sorted_rows, [lengths[i] for i in order], state.select(order_t), backend)
        inverse = torch.empty_like(order_t)
        inverse[order_t] = torch.arange(batch, device=device)
        return [o[:, inverse] for o in outputs], final.select(inverse)

    def _layers(
        self, rows: TokenRows, lengths: List[int], state: LSTMState, backend: Backend
    ) -> Tuple[List[torch.Tensor], LSTMState]:
        """Every layer without the training loop, rows sorted by decreasing length."""
        dropout = self.dropout if self.training else 0.0
        # the first layer reads the token table directly where the kernel adds its input products
        table = (rows.table, rows.index) if backend.kernel and not dropout else None
        x = None if table is not None else rows.gather()
        outputs: List[torch.Tensor] = []
        finals_h, finals_c = [], []
        for layer in range(self.n_layers):
            h0, c0 = state.h[layer], state.c[layer]
            layer_input = nn.functional.dropout(x, dropout, True) if dropout and x is not None else x
            if backend.reference:
                assert layer_input is not None
                params = (self.weight_ih[layer], self.weight_hh[layer], self.bias[layer], self.weight_proj[layer])
                out, h_n, c_n = reference_layer(layer_input, h0, c0, lengths, *params, self.clips)
            else:
                weights = self._inference_weights(layer, rows.table, backend)
                out, h_n, c_n = lstm_inference.run_layer(
                    weights, backend, inputs=layer_input, table=table if layer == 0 else None, h0=h0, c0=c0,
                    lengths=lengths, clips=self.clips,
                )
            if self.use_skip_connections and x is not None and layer > 0:
                out = out + x
            outputs.append(out)
            finals_h.append(h_n)
            finals_c.append(c_n)
            x = out
        return outputs, LSTMState(tuple(finals_h), tuple(finals_c))

    def _inference_weights(self, layer: int, like: torch.Tensor, backend: Backend) -> lstm_inference.LayerWeights:
        """The layer's weights as the fast loops read them, kept between calls for
        layers of at most INFERENCE_WEIGHTS_CACHED_BYTES.

        Building them costs about 1.5 ms per direction for the small shapes
        (concatenation, scaling, oneDNN's packing), per batch; kept, they are a
        second copy of the layer's weights, so the original shapes (134 MB per
        layer) build them per call. The key is the parameters' `WeightsKey`
        (identity and version: any in-place update or new tensor rebuilds
        them), the inputs' dtype and device, and the backend.
        """
        params = (self.weight_ih[layer], self.weight_hh[layer], self.bias[layer], self.weight_proj[layer])
        key = WeightsKey(params, like.dtype, like.device, backend.name)
        kept = self._kept_weights.get(layer)
        if kept is not None and kept[0] == key:
            return kept[1]
        w_ih, w_hh, bias, w_proj = (p.detach().to(like.dtype) for p in params)
        weights = lstm_inference.prepare_weights(w_ih, w_hh, bias, w_proj, backend, first_layer=layer == 0)
        if sum(p.numel() * p.element_size() for p in params) <= INFERENCE_WEIGHTS_CACHED_BYTES:
            self._kept_weights[layer] = (key, weights)
        return weights

    def clear_inference_cache(self) -> None:
        """Drop the kept inference weights (they are rebuilt when a weight changes anyway)."""
        self._kept_weights = {}

    def __getstate__(self) -> dict:
        # oneDNN's packed weights have no storage to copy or pickle; they are rebuilt on use
        state = self.__dict__.copy()
        state["_kept_weights"] = {}
        return state


def reference_layer(
    x: torch.Tensor,
    h0: torch.Tensor,
    c0: torch.Tensor,
    lengths: Sequence[int],
    w_ih: torch.Tensor,
    w_hh: torch.Tensor,
    bias: torch.Tensor,
    w_proj: torch.Tensor,
    clips: Tuple[float, float],
) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One layer, both directions, as TensorFlow's projected LSTMCell defines it (the `reference` backend).

    x (2, batch, time, P), h0 (2, batch, P), c0 (2, batch, H); gates in the
    internal order i, f, o, j. Every row runs every step; a row past its
    length keeps its state and outputs zeros. Works with and without
    gradients. The products are padded to `product_rows` rows, so that a
    row's numbers do not depend on its batch (heights.py).
    """
    _, batch, time, _ = x.shape
    H = w_hh.shape[2] // 4
    cell_clip, proj_clip = clips
    pad = product_rows(batch, "mkl") - batch  # zero rows, dropped at the end
    x = nn.functional.pad(x, (0, 0, 0, 0, 0, pad))
    h, c = nn.functional.pad(h0, (0, 0, 0, pad)), nn.functional.pad(c0, (0, 0, 0, pad))
    running_rows = torch.tensor(list(lengths) + [0] * pad, device=x.device)
    b = bias + lstm_train.forget_offset(H, bias)
    outputs = []
    for t in range(time):
        gates = torch.baddbmm(b, x[:, :, t], w_ih) + torch.bmm(h, w_hh)
        i, f, o, j = gates.split(H, dim=-1)
        c_t = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(j)
        if cell_clip:
            c_t = c_t.clamp(-cell_clip, cell_clip)
        h_t = torch.bmm(torch.sigmoid(o) * torch.tanh(c_t), w_proj)
        if proj_clip:
            h_t = h_t.clamp(-proj_clip, proj_clip)
        running = (t < running_rows).view(1, -1, 1)
        h, c = torch.where(running, h_t, h), torch.where(running, c_t, c)
        outputs.append(torch.where(running, h_t, torch.zeros_like(h_t)))
    out = torch.stack(outputs, dim=2) if outputs else x.new_zeros((2, x.shape[1], 0, w_proj.shape[2]))
    return out[:, :batch], h[:, :batch], c[:, :batch]


__all__ = ["BiLSTMStack", "LSTMState", "TokenRows", "permute_gates", "reference_layer", "TF_TO_INTERNAL",
           "INTERNAL_TO_TF"]
