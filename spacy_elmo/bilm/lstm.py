"""Stacked, projected LSTMs for both directions, run together.

Each layer is TensorFlow's `LSTMCell(num_proj, cell_clip, proj_clip)` as
bilm-tf used it: +1.0 on the forget gate, the cell clipped to +-cell_clip,
the output projected and clipped to +-proj_clip; skip connections add a
layer's input to its output above the first layer. Gates are stored (i, f, o,
j), the sigmoid gates one slice (`io/gate_order.py` permutes published files).
Inputs are rows of a token table in *processing order*: forward reads a
sentence left to right, backward reads it reversed within its length.
`reference_layer` is the recurrence as written; the stack's engine
(`engine/`) computes it, with autograd in training mode and without in eval mode.
"""
from dataclasses import dataclass
from typing import TYPE_CHECKING, List, NamedTuple, Optional, Sequence, Tuple

import torch
from torch import nn

from .config import BiLMConfig

if TYPE_CHECKING:
    from .engine import Engine


@dataclass(frozen=True)
class TokenRows:
    """The stack's inputs: a token table (n, P) and the (2, batch, time) row each position reads."""

    table: torch.Tensor
    index: torch.Tensor

    def gather(self) -> torch.Tensor:
        """The inputs as a dense (2, batch, time, P) tensor."""
        return self.table[self.index]


class LSTMState(NamedTuple):
    """Per layer: h (2, batch, projection_dim) and c (2, batch, lstm_dim); axis 0 = direction."""

    h: Tuple[torch.Tensor, ...]
    c: Tuple[torch.Tensor, ...]

    def detach(self) -> "LSTMState":
        return LSTMState(tuple(t.detach() for t in self.h), tuple(t.detach() for t in self.c))

    def select(self, rows: torch.Tensor) -> "LSTMState":
        return LSTMState(tuple(t[:, rows] for t in self.h), tuple(t[:, rows] for t in self.c))

    @property
    def batch(self) -> int:
        return self.h[0].shape[1]

    def splice(self, rest: "LSTMState", n: int) -> "LSTMState":
        """Rows [:n] of this state, then rows [n:] of `rest` (on rest's device and dtype)."""
        def join(mine: torch.Tensor, theirs: torch.Tensor) -> torch.Tensor:
            return torch.cat([mine[:, :n].to(theirs), theirs[:, n:]], dim=1)

        return LSTMState(tuple(map(join, self.h, rest.h)), tuple(map(join, self.c, rest.c)))


class BiLSTMStack(nn.Module):
    """L projected LSTM layers per direction, forward and backward independent."""

    def __init__(self, config: BiLMConfig, engine: Optional["Engine"] = None) -> None:
        """`engine`: the one that computes the stack (BiLM passes its own; default: the best available here)."""
        super().__init__()
        self.n_layers, self.hidden, self.proj = config.n_layers, config.lstm_dim, config.projection_dim
        self.cell_clip, self.proj_clip = config.cell_clip, config.proj_clip
        self.use_skip_connections, self.dropout = config.use_skip_connections, config.dropout
        H, P = config.lstm_dim, config.projection_dim
        # axis 0 = direction (0 forward, 1 backward); gate blocks in order i, f, o, j
        self.weight_ih = nn.ParameterList([nn.Parameter(torch.zeros(2, P, 4 * H)) for _ in range(self.n_layers)])
        self.weight_hh = nn.ParameterList([nn.Parameter(torch.zeros(2, P, 4 * H)) for _ in range(self.n_layers)])
        self.bias = nn.ParameterList([nn.Parameter(torch.zeros(2, 1, 4 * H)) for _ in range(self.n_layers)])
        self.weight_proj = nn.ParameterList([nn.Parameter(torch.zeros(2, H, P)) for _ in range(self.n_layers)])
        if engine is None:
            from .engine import make_engine  # the engine package imports this module

            engine = make_engine()
        self.engine: "Engine" = engine

    def layer_parameters(self, layer: int) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(W_ih, W_hh, bias, W_proj) of one layer, each with the direction on axis 0."""
        return self.weight_ih[layer], self.weight_hh[layer], self.bias[layer], self.weight_proj[layer]

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
        return LSTMState(tuple(like.new_zeros((2, batch_size, self.proj)) for _ in range(self.n_layers)),
                         tuple(like.new_zeros((2, batch_size, self.hidden)) for _ in range(self.n_layers)))

    @property
    def clips(self) -> Tuple[float, float]:
        return (self.cell_clip or 0.0, self.proj_clip or 0.0)

    def forward(
        self, rows: TokenRows, lengths: Sequence[int], state: Optional[LSTMState] = None
    ) -> Tuple[List[torch.Tensor], LSTMState]:
        """Both directions over `rows` from `state` (default: zeros), each row `lengths[b]` steps long.

        Returns each layer's output (2, batch, time, projection_dim) in
        processing order (zeros past a row's length) and each row's final state.
        """
        if state is None:
            state = self.zero_state(rows.index.shape[1], rows.table)
        lengths = [int(n) for n in lengths]
        if self.training:
            return self.engine.train_stack(self, rows, lengths, state)
        with torch.no_grad():
            return self.engine.infer_stack(self, rows, lengths, state)


def forget_offset(hidden: int, like: torch.Tensor) -> torch.Tensor:
    """TensorFlow's +1.0 on the forget gate, as a (1, 1, 4H) bias."""
    offset = like.new_zeros((1, 1, 4 * hidden))
    offset[..., hidden : 2 * hidden] = 1.0
    return offset


def reference_layer(
    x: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor, lengths: Sequence[int], w_ih: torch.Tensor,
    w_hh: torch.Tensor, bias: torch.Tensor, w_proj: torch.Tensor, clips: Tuple[float, float], rows: int = 0,
) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One layer, both directions: x (2, batch, time, P), h0 (2, batch, P), c0 (2, batch, H).

    Every row runs every step; a row past its length keeps its state and
    outputs zeros. `rows`: products at this many rows (zero rows appended), so
    that a row's numbers do not depend on its batch (engine/product_rows.py).
    """
    _, batch, time, _ = x.shape
    H = w_hh.shape[2] // 4
    cell_clip, proj_clip = clips
    pad = max(rows - batch, 0)
    x = nn.functional.pad(x, (0, 0, 0, 0, 0, pad))
    h, c = nn.functional.pad(h0, (0, 0, 0, pad)), nn.functional.pad(c0, (0, 0, 0, pad))
    running_rows = torch.tensor(list(lengths) + [0] * pad, device=x.device)
    b = bias + forget_offset(H, bias)
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


__all__ = ["BiLSTMStack", "LSTMState", "TokenRows", "forget_offset", "reference_layer"]
