"""Stacked, projected LSTMs for both directions, run together.

Each layer is TensorFlow's `LSTMCell(num_proj=..., cell_clip=..., proj_clip=...)`
as bilm-tf used it: +1.0 added to the forget gate at run time, the cell
clipped to +-cell_clip, the output projected and clipped to +-proj_clip. Skip
connections add a layer's input to its output for every layer but the first.
Gates are stored in the order (i, f, o, j) so that the three sigmoid gates are
one contiguous slice; the published weights (order i, j, f, o) are permuted on
import and export.

Both directions run in one loop as a batch of two (`torch.baddbmm` over a
leading direction axis). Inputs arrive in *processing order*: the forward
direction reads a row left to right, the backward direction reads its own
input, which for sentences is the row reversed within its length. Rows are
sorted by length so that, at step t, the active rows are a prefix of the batch:
no work is spent on padding, and a row never reads padding.

Speed, with gradients: the input products of all timesteps are one matrix
product before the loop, and the recurrence runs inside one autograd Function
whose backward pass is hand-written: per step it does only the two small
products the recurrence needs, and the weight gradients are single large
products over all timesteps afterwards.

Speed, inference (no gradients): a step is one product of `[x_t, h_{t-1}]`
(K = 2 x projection) with the stacked input and recurrent weights, so nothing
of size batch x time x 4H is ever materialised (that buffer's allocation and
bias copy cost more than its product), then gate math done in place with
tanh as 2 sigmoid(2x) - 1, because PyTorch's CPU tanh costs about three
sigmoids (details in `_recurrence_inference`). 1.6x the previous loop on the
small shapes (benchmarks/RESULTS.md); results agree with the gradient path
to ~3e-7 in float32. On x86 CPUs the products go through oneDNN with the
sigmoid fused into them (`onednn.py`), another 1.1-1.2x on the LSTMs; MKL's
`baddbmm` over both directions elsewhere. Where the optional compiled kernel
is built (`cell_kernel.py`), the oneDNN loop's products carry no activation
and the gate sigmoids and cell update are one pass instead of eight.
"""
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import torch
from torch import nn

from . import cell_kernel, lstm_train, onednn
from .config import BiLMConfig
from .weights_key import WeightsKey

# published (TensorFlow) order i, j, f, o  ->  internal order i, f, o, j
TF_TO_INTERNAL = (0, 2, 3, 1)
INTERNAL_TO_TF = (0, 3, 1, 2)


def permute_gates(tensor: torch.Tensor, order: Sequence[int]) -> torch.Tensor:
    """Reorder the four gate blocks along the last axis."""
    blocks = tensor.chunk(4, dim=-1)
    return torch.cat([blocks[i] for i in order], dim=-1)


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

    def __init__(self, config: BiLMConfig) -> None:
        super().__init__()
        self.n_layers = config.n_layers
        self.hidden = config.lstm_dim
        self.proj = config.projection_dim
        self.cell_clip = config.cell_clip
        self.proj_clip = config.proj_clip
        self.use_skip_connections = config.use_skip_connections
        self.dropout = config.dropout
        self.fused = True
        H, P = config.lstm_dim, config.projection_dim
        # axis 0 = direction (0 forward, 1 backward); gate blocks in order i, f, o, j
        self.weight_ih = nn.ParameterList([nn.Parameter(torch.zeros(2, P, 4 * H)) for _ in range(self.n_layers)])
        self.weight_hh = nn.ParameterList([nn.Parameter(torch.zeros(2, P, 4 * H)) for _ in range(self.n_layers)])
        self.bias = nn.ParameterList([nn.Parameter(torch.zeros(2, 1, 4 * H)) for _ in range(self.n_layers)])
        self.weight_proj = nn.ParameterList([nn.Parameter(torch.zeros(2, H, P)) for _ in range(self.n_layers)])
        self._kept_weights: Dict[int, Tuple[WeightsKey, _InferenceWeights]] = {}

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

    def forward(
        self,
        inputs: torch.Tensor,
        lengths: torch.Tensor,
        state: Optional[LSTMState] = None,
        token_rows: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
        shared_start: bool = False,
    ) -> Tuple[List[torch.Tensor], LSTMState]:
        """Run both directions.

        inputs: (2, batch, time, projection_dim) in processing order.
        lengths: (batch,) int64 on CPU.
        token_rows: optionally (table, index) with inputs == table[index]
            (index (2, batch, time) int64): the inputs are rows of a token
            table. Inference with the compiled cell kernel then computes the
            first layer's input products once per table row instead of once
            per position (the sums are grouped differently: the results agree
            to within 1e-6).
        shared_start: every row's initial state is the same (e.g. the state
            after <S>). With token_rows, inference then computes each layer's
            first step once per distinct first token of each direction and
            copies it to the rows that share it (the same bits).
        Returns each layer's output (2, batch, time, projection_dim) in
        processing order (zeros past a row's length) and the final state of
        every row (its state after its own last step).
        """
        batch = inputs.shape[1]
        if state is None:
            state = self.zero_state(batch, inputs)
        lengths_list = [int(n) for n in lengths.tolist()]
        if torch.is_grad_enabled() and self.fused:
            outputs, (finals_h, finals_c) = lstm_train.run_stack(self, inputs, lengths_list, state)
            return outputs, LSTMState(tuple(finals_h), tuple(finals_c))
        order = sorted(range(batch), key=lambda i: -lengths_list[i])
        identity = order == list(range(batch))
        if not identity:
            order_t = torch.tensor(order, device=inputs.device)
            inputs = inputs[:, order_t]
            state = state.select(order_t)
            if token_rows is not None:
                token_rows = (token_rows[0], token_rows[1][:, order_t])
        sorted_lengths = [lengths_list[i] for i in order]
        first_groups = None
        if shared_start and SHARE_FIRST_STEPS and token_rows is not None and batch and not torch.is_grad_enabled():
            first_groups = _first_step_groups(token_rows[1][:, :, 0], batch)
        outputs: List[torch.Tensor] = []
        finals_h, finals_c = [], []
        x = inputs
        for layer in range(self.n_layers):
            layer_input = x
            if self.training and self.dropout > 0:
                layer_input = nn.functional.dropout(layer_input, self.dropout, True)
            rows = token_rows if layer == 0 else None
            out, h_n, c_n = self.run_layer(layer, layer_input, sorted_lengths, state.h[layer], state.c[layer], rows, first_groups)
            if self.use_skip_connections and layer > 0:
                out = out + x
            outputs.append(out)
            finals_h.append(h_n)
            finals_c.append(c_n)
            x = out
        final = LSTMState(tuple(finals_h), tuple(finals_c))
        if not identity:
            inverse = torch.empty(batch, dtype=torch.long, device=inputs.device)
            inverse[order_t] = torch.arange(batch, device=inputs.device)
            outputs = [o[:, inverse] for o in outputs]
            final = final.select(inverse)
        return outputs, final

    def run_layer(
        self,
        layer: int,
        inputs: torch.Tensor,
        lengths: List[int],
        h0: torch.Tensor,
        c0: torch.Tensor,
        token_rows: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
        first_groups: Optional[list] = None,
    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One layer, both directions; rows sorted by decreasing length (token_rows,
        first_groups: see `forward`)."""
        if not torch.is_grad_enabled():
            clips = (self.cell_clip or 0.0, self.proj_clip or 0.0)
            weights = self._inference_weights(layer, inputs)
            return _recurrence_inference(inputs, h0, c0, weights, lengths, clips, token_rows, first_groups)
        # with gradients and `fused` off: the plain-autograd reference
        _, batch, time, _ = inputs.shape
        bias = self.bias[layer] + _forget_offset(self.hidden, inputs)
        gates_x = torch.baddbmm(bias, inputs.reshape(2, batch * time, -1), self.weight_ih[layer])
        gates_x = gates_x.view(2, batch, time, 4 * self.hidden)
        clips = (self.cell_clip or 0.0, self.proj_clip or 0.0)
        return _recurrence_autograd(gates_x, h0, c0, self.weight_hh[layer], self.weight_proj[layer], lengths, clips)

    def _inference_weights(self, layer: int, like: torch.Tensor) -> "_InferenceWeights":
        """The layer's weights as the inference loop reads them, kept between calls
        for layers of at most INFERENCE_WEIGHTS_CACHED_BYTES.

        Building them costs about 1.5 ms per direction for the small shapes
        (concatenation, scaling, oneDNN's packing), per batch; kept, they are a
        second copy of the layer's weights, so the original shapes (134 MB per
        layer) build them per call. The key is the parameters' `WeightsKey`
        (identity and version: any in-place update or new tensor rebuilds
        them) with the inputs' dtype and device, whether oneDNN takes the
        products and whether the cell kernel reads token-table inputs (the
        first layer's extra packs).
        """
        params = (self.weight_ih[layer], self.weight_hh[layer], self.bias[layer], self.weight_proj[layer])
        on_onednn = onednn.usable(like)
        # the first layer's inputs may come as token-table rows, which only the kernel path reads
        split = on_onednn and layer == 0 and cell_kernel.usable(like)
        key = WeightsKey(params, like.dtype, like.device, on_onednn, split)
        kept = self._kept_weights.get(layer)
        if kept is not None and kept[0] == key:
            return kept[1]
        weights = _prepare_inference_weights(*(p.detach().to(like.dtype) for p in params), on_onednn, split)
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


# layers whose parameters take at most this many bytes keep their inference weights
# between calls (the small and embedded shapes; not the original 4096/512 ones)
INFERENCE_WEIGHTS_CACHED_BYTES = 64 << 20


class _InferenceWeights(NamedTuple):
    """One layer's weights for `_recurrence_inference`: the j gate scaled by 2 and
    TF's forget +1 in the bias; the projection doubled (the loop carries m / 2).

    On oneDNN only `packed` is set, one `_PackedDirection` per direction.
    On MKL: `stacked` (2, 2P, 4H), `bias` (2, 1, 4H) and `proj2` (2, H, P).
    """

    stacked: Optional[torch.Tensor] = None
    bias: Optional[torch.Tensor] = None
    proj2: Optional[torch.Tensor] = None
    packed: Optional[Tuple["_PackedDirection", ...]] = None


class _PackedDirection(NamedTuple):
    """One direction's weights packed for oneDNN: `[W_ih; W_hh]`, the projection,
    the bias, and (first layer only) `W_ih` and `W_hh` apart, for token-table inputs."""

    gates: torch.Tensor
    out: torch.Tensor
    bias: torch.Tensor
    input: Optional[torch.Tensor] = None
    recurrent: Optional[torch.Tensor] = None


def _prepare_inference_weights(w_ih, w_hh, bias, w_proj, on_onednn: bool, split: bool = False) -> _InferenceWeights:
    H = w_ih.shape[2] // 4
    scale = w_ih.new_ones((4 * H,))
    scale[3 * H :] = 2.0
    stacked = torch.cat([w_ih, w_hh], dim=1).mul_(scale)
    bias = (bias + _forget_offset(H, bias)) * scale
    if on_onednn:
        P = w_ih.shape[1]
        packed = tuple(
            _PackedDirection(
                onednn.pack(stacked[d].t()),
                onednn.pack(w_proj[d].t() * 2.0),
                bias[d].reshape(-1).contiguous(),
                onednn.pack(stacked[d, :P].t()) if split else None,
                onednn.pack(stacked[d, P:].t()) if split else None,
            )
            for d in range(2)
        )
        return _InferenceWeights(packed=packed)
    return _InferenceWeights(stacked=stacked, bias=bias, proj2=w_proj * 2.0)


# see `_recurrence_inference_mkl`: products at least this high are row-invariant in MKL
MIN_PRODUCT_ROWS = 8


_forget_offset = lstm_train.forget_offset


def _active_counts(lengths: Sequence[int], time: int) -> List[int]:
    """Rows still running at each step (lengths sorted in decreasing order)."""
    counts, active = [], len(lengths)
    for t in range(time):
        while active > 0 and lengths[active - 1] <= t:
            active -= 1
        counts.append(active)
    return counts


def _cell_update(gates, c2, m, cell_clip):
    """The cell from the gates' sigmoids (i, f, o and j scaled by 2), in place.

    c2 (the doubled cell) is updated and m (o tanh(c), halved) written into
    the given buffers, so a step allocates nothing here. With s_j =
    sigmoid(2 z_j), tanh(z_j) = 2 s_j - 1, so the doubled cell c2' = f c2 +
    2 i tanh(z_j) = f c2 + 4 i s_j - 2 i; and o tanh(c) = 2 o (sigmoid(c2) -
    1/2), the 2 being folded into the projection weights.
    """
    s_i, s_f, s_o, s_j = gates.chunk(4, dim=-1)
    c2.mul_(s_f).addcmul_(s_i, s_j, value=4.0).sub_(s_i, alpha=2.0)
    if cell_clip:
        c2.clamp_(-2.0 * cell_clip, 2.0 * cell_clip)
    torch.sigmoid(c2, out=m).sub_(0.5).mul_(s_o)


# inference: rows that start from the same state and read the same first token share
# their first step (see `BiLSTMStack.forward`'s shared_start); False for A/B runs
SHARE_FIRST_STEPS = True


def _recurrence_inference(inputs, h0, c0, weights, lengths, clips, token_rows=None, first_groups=None):
    """One layer without autograd: per step, one product of `[x_t, h]` with `[W_ih; W_hh]`.

    inputs (2, batch, time, P), rows sorted by decreasing length; `weights`
    (`_InferenceWeights`) have the j gate scaled by 2, so one
    sigmoid over all gates gives s_j = sigmoid(2 z_j) and tanh(z_j) = 2 s_j - 1.
    The cell is carried doubled (c2 = 2c, exact in floating point), so that
    tanh(c) = 2 sigmoid(c2) - 1 needs no scaling pass, and the projection
    weights are doubled so that m = o (sigmoid(c2) - 1/2) projects to o tanh(c)
    W_proj: seven passes over the cell per step instead of ten.

    The products go through oneDNN where it is usable (`onednn.py`: the
    sigmoid fused into the product, 1.1-1.2x on the LSTMs; the weights come
    packed for it), else through MKL's `baddbmm` with both directions batched.
    """
    if weights.packed is not None:
        return _recurrence_inference_onednn(inputs, h0, c0, weights.packed, lengths, clips, token_rows, first_groups)
    return _recurrence_inference_mkl(inputs, h0, c0, weights.stacked, weights.bias, weights.proj2, lengths, clips)


def _recurrence_inference_onednn(inputs, h0, c0, packed, lengths, clips, token_rows=None, first_groups=None):
    """`_recurrence_inference` on oneDNN: one direction at a time, the sigmoid fused
    into the product, or with the compiled cell kernel where it is usable (the
    product without activation, then sigmoids and cell update in one pass).

    With the kernel and `token_rows` (the first layer, see `BiLSTMStack.forward`),
    the input products are computed once per token-table row and the kernel
    adds each row's before its sigmoids, so a step's product is `h W_hh` alone
    (K = P instead of 2P): the input half of the first layer's products is
    done per distinct token instead of per position.

    With `first_groups` (per direction: rows whose initial state and first
    input are the same, see `_first_step_groups`), the first step is computed
    once per group and copied to its rows.

    With packed weights oneDNN's rows are the same bits at every product
    height from 3 rows up; the heights are rounded up by `onednn.padded_rows`
    (at least MIN_ROWS; finished or scratch rows fill up), so that a few dozen
    kernel shapes serve every batch.
    """
    _, batch, time, P = inputs.shape
    H = c0.shape[2]
    max_len = lengths[0] if lengths else 0
    counts = _active_counts(lengths, max_len)
    # written time-major, so that a step writes (and the next layer reads) contiguous
    # rows; returned as a (2, batch, time, P) view
    out = inputs.new_zeros((2, time, batch, P))
    h_n, c_n = h0.clone(), c0.clone()
    rows = onednn.padded_rows(batch)
    fused_cell = cell_kernel.usable(inputs)
    split = fused_cell and token_rows is not None and packed[0].input is not None
    input_products = table_rows = None
    for d, w in enumerate(packed):
        c2 = inputs.new_zeros((rows, H))
        c2[:batch] = c0[d] * 2.0
        m = inputs.new_empty((rows, H))
        x_d, out_d = inputs[d], out[d]
        if split:
            table, index = token_rows
            input_products = _table_products(table, w.input, w.bias)
            table_rows = index.new_zeros((time, rows))  # per step, each row's table row
            table_rows[:, :batch] = index[d].t()
            state = inputs.new_zeros((rows, P))  # h_{t-1}; a step's height never grows
            state[:batch] = h0[d]
        else:
            state = inputs.new_zeros((rows, 2 * P))  # [x_t, h_{t-1}] of the active rows
            state[:batch, P:] = h0[d]
        groups = first_groups[d] if first_groups is not None else None
        for t in range(max_len):
            a = counts[t]
            height = onednn.padded_rows(a)  # <= rows: padded_rows is non-decreasing
            if t == 0 and groups is not None:
                h = _shared_first_step(w, split, fused_cell, state, c2, x_d, input_products, table_rows, groups, clips)
            else:
                if not split:
                    state[:a, :P] = x_d[:a, t]
                h = _step(w, split, fused_cell, state[:height], c2[:height], m[:height], input_products,
                          table_rows[t, :height] if split else None, clips)
            out_d[t, :a] = h[:a]
            if split:
                state = h  # the next step's height is at most this one's
            else:
                state[:height, P:] = h[:height]
            # rows whose last step this is keep their final state (h, the cell undoubled)
            end = counts[t + 1] if t + 1 < max_len else 0
            if end < a:
                h_n[d, end:a] = h[end:a]
                c_n[d, end:a] = c2[end:a] * 0.5
        input_products = None  # freed before the next direction's are computed
    return out.transpose(1, 2), h_n, c_n


def _step(w, split, fused_cell, state, c2, m, input_products, table_rows, clips) -> torch.Tensor:
    """One step for the rows of `state` (h_{t-1}, or [x_t, h_{t-1}] where not split),
    updating c2 and m in place; returns h_t."""
    cell_clip, proj_clip = clips
    if split:
        gates = onednn.linear(state, w.recurrent)
        cell_kernel.update(gates, c2, m, cell_clip, input_products, table_rows)
    elif fused_cell:
        cell_kernel.update(onednn.linear(state, w.gates, w.bias), c2, m, cell_clip)
    else:
        _cell_update(onednn.linear(state, w.gates, w.bias, "sigmoid"), c2, m, cell_clip)
    return onednn.linear(m, w.out, clip=proj_clip)


def _shared_first_step(w, split, fused_cell, state, c2, x_d, input_products, table_rows, groups, clips):
    """The first step computed once per group of rows (same initial state, same
    first input) and copied to every row of the group: returns h for all rows
    of `state` (rows of length 0 get one too, never read) and writes their c2. The group's representative row is computed
    exactly as it would be in the full step (rows do not depend on the product's
    height), so the numbers are the same bits."""
    representatives, group_of_row = groups
    n, batch = representatives.shape[0], group_of_row.shape[0]
    height = onednn.padded_rows(n)
    c2_rep = c2.new_zeros((height, c2.shape[1]))
    c2_rep[:n] = c2[representatives]
    state_rep = state.new_zeros((height, state.shape[1]))
    state_rep[:n] = state[representatives]
    rows_rep = None
    if split:
        rows_rep = table_rows.new_zeros(height)
        rows_rep[:n] = table_rows[0, representatives]
    else:
        P = x_d.shape[2]
        state_rep[:n, :P] = x_d[representatives, 0]
    h_rep = _step(w, split, fused_cell, state_rep, c2_rep, c2.new_empty((height, c2.shape[1])), input_products, rows_rep, clips)
    c2[:batch] = c2_rep[group_of_row]
    h = h_rep.new_zeros((state.shape[0], h_rep.shape[1]))
    h[:batch] = h_rep[group_of_row]
    return h


def _first_step_groups(first_inputs: torch.Tensor, batch: int):
    """Per direction, (representatives, group of each row) for rows whose first
    input (a token-table row) is the same, or None where sharing saves nothing.

    first_inputs: (2, batch) table rows read by each row's first step."""
    groups = []
    for d in range(first_inputs.shape[0]):
        values, group_of_row = torch.unique(first_inputs[d], return_inverse=True)
        if values.shape[0] >= batch:
            groups.append(None)
            continue
        representatives = torch.full((values.shape[0],), batch, dtype=torch.long, device=first_inputs.device)
        representatives.scatter_reduce_(0, group_of_row, torch.arange(batch, device=first_inputs.device), "amin")
        groups.append((representatives, group_of_row))
    return groups


# token-table input products are computed this many rows at a time (oneDNN's rows
# with packed weights are the same bits at every height from 3 up to here, measured)
TABLE_PRODUCT_ROWS = 8192
# tables of more rows than this are computed at a multiple of it (a few dozen rows
# more): a batch's table height follows its vocabulary, and oneDNN keeps a kernel
# per height, so the heights are kept to a handful
TABLE_ROUNDING = 256


def _table_products(table: torch.Tensor, packed_input: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """`table W_ih + bias` (n, 4H), in products of at most TABLE_PRODUCT_ROWS rows,
    each at a rounded height (see `onednn.padded_rows`); one product, not
    copied, for a batch's table (at most `embed`'s 8,192 tokens)."""
    n = table.shape[0]
    parts = []
    for start in range(0, n, TABLE_PRODUCT_ROWS):
        part = table[start : start + TABLE_PRODUCT_ROWS]
        k = part.shape[0]
        height = onednn.padded_rows(k) if k <= TABLE_ROUNDING else -(-k // TABLE_ROUNDING) * TABLE_ROUNDING
        parts.append(onednn.linear(onednn.pad_rows(part, height).contiguous(), packed_input, bias)[:k])
    return parts[0] if len(parts) == 1 else torch.cat(parts)


def _recurrence_inference_mkl(inputs, h0, c0, w_stacked, bias, w_proj2, lengths, clips):
    """`_recurrence_inference` on MKL, both directions in one `baddbmm` per step.

    Batch invariance: MKL computes a product's rows with another kernel when
    the matrix is 1 to 3 rows high (measured: rows differ in the last bits,
    while every height from 4 to 600 gives bit-identical rows, for the
    small, original and embedded shapes, on 1 and 2 threads). Rows that have
    finished (or scratch rows, for batches under MIN_PRODUCT_ROWS) are
    carried along to keep every product at least that high, so a sentence's
    layers are the same bits whatever it is batched with.
    """
    _, batch, time, P = inputs.shape
    H = w_stacked.shape[2] // 4
    cell_clip, proj_clip = clips
    max_len = lengths[0] if lengths else 0
    counts = _active_counts(lengths, max_len)
    out = inputs.new_zeros((2, batch, time, P))
    h_n, c_n = h0.clone(), c0.clone()
    rows = max(batch, MIN_PRODUCT_ROWS)
    xh = inputs.new_zeros((2, rows, 2 * P))  # [x_t, h_{t-1}] of the active rows
    xh[:, :batch, P:] = h0
    c2 = inputs.new_zeros((2, rows, H), dtype=c0.dtype)
    c2[:, :batch] = c0 * 2.0
    m = inputs.new_empty((2, rows, H))
    for t in range(max_len):
        a = counts[t]
        height = max(a, MIN_PRODUCT_ROWS)
        xa = xh[:, :height]
        xa[:, :a, :P] = inputs[:, :a, t]
        gates = torch.baddbmm(bias, xa, w_stacked).sigmoid_()
        _cell_update(gates, c2[:, :height], m[:, :height], cell_clip)
        h = torch.bmm(m[:, :height], w_proj2)
        if proj_clip:
            h.clamp_(-proj_clip, proj_clip)
        out[:, :a, t] = h[:, :a]
        xa[..., P:] = h
        # rows whose last step this is keep their final state
        end = counts[t + 1] if t + 1 < max_len else 0
        if end < a:
            h_n[:, end:a] = h[:, end:a]
            c_n[:, end:a] = c2[:, end:a] * 0.5
    return out, h_n, c_n


def _recurrence_autograd(gates_x, h0, c0, w_hh, w_proj, lengths, clips):
    """The same recurrence in plain autograd: the reference the fused path is tested against."""
    _, batch, time, four_h = gates_x.shape
    H = four_h // 4
    cell_clip, proj_clip = clips
    steps_x = gates_x.unbind(2)
    max_len = lengths[0] if lengths else 0
    counts = _active_counts(lengths, max_len)
    h, c = h0, c0
    steps, h_parts, c_parts = [], [], []
    for t in range(max_len):
        a = counts[t]
        if a < h.shape[1]:
            h_parts.append(h[:, a:])
            c_parts.append(c[:, a:])
            h, c = h[:, :a], c[:, :a]
        gates = torch.baddbmm(steps_x[t][:, :a], h, w_hh)
        sig = torch.sigmoid(gates[..., : 3 * H])
        c = sig[..., H : 2 * H] * c + sig[..., :H] * torch.tanh(gates[..., 3 * H :])
        if cell_clip:
            c = c.clamp(-cell_clip, cell_clip)
        h = torch.bmm(sig[..., 2 * H :] * torch.tanh(c), w_proj)
        if proj_clip:
            h = h.clamp(-proj_clip, proj_clip)
        steps.append(nn.functional.pad(h, (0, 0, 0, batch - a)))
    h_parts.append(h)
    c_parts.append(c)
    h_n = torch.cat(h_parts[::-1], dim=1)
    c_n = torch.cat(c_parts[::-1], dim=1)
    if steps:
        out = torch.stack(steps, dim=2)
        out = nn.functional.pad(out, (0, 0, 0, time - max_len))
    else:
        out = gates_x.new_zeros((2, batch, time, w_proj.shape[2]))
    return out, h_n, c_n


__all__ = ["BiLSTMStack", "LSTMState", "permute_gates", "TF_TO_INTERNAL", "INTERNAL_TO_TF"]
