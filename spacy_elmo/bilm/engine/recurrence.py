"""The LSTM stack's training path: both directions over packed rows, backward by hand.

A batch's positions are *packed* time-major, as in PyTorch's PackedSequence:
rows are sorted by decreasing length, so the rows still running at step t are
a prefix of the batch, and step t's rows are the contiguous block
`packed[offsets[t] : offsets[t] + counts[t]]`. Nothing is computed or stored
for padding.

Each layer runs as one autograd Function (`LayerRecurrence`), both directions
in it:

* forward: per step one product of `[x_t, h_{t-1}]` with the stacked input
  and recurrent weights, the cell (`_cell_forward`) and the projection;
* backward: per step, in reverse, the projection's gradient, the cell's
  (`_cell_backward`) and one product giving the gradients of x_t and
  h_{t-1}; the weight gradients are then one product over all positions.

Each of a step's products is one batched call over both directions (the two
directions' rows at step t are equally many), so that on 2 threads the work
splits one direction a thread.

The cell's element-wise work goes through the compiled kernel
(`cell_kernel.train_forward` / `train_backward`) for the `onednn+kernel`
engine, PyTorch's ops for the others; the model's plain recurrence
(`lstm.reference_layer`, the `reference` engine) is what both are tested against.

The backward pass is written by hand, in place, and is not itself
differentiable (as PyTorch's `once_differentiable`): where gradients are
computed with `create_graph=True`, they come out of a node (`OnceDifferentiable`)
that is connected to the layer's inputs and weights and raises a
`RuntimeError` saying so when a second-order gradient (a gradient penalty,
`gradgradcheck`) reaches it, never a silent None or zero. The `reference`
engine, plain autograd, computes them.
"""
from typing import Any, Callable, List, NoReturn, Optional, Sequence, Tuple

import numpy
import torch

from ..lstm import LSTMState, forget_offset
from . import cell_kernel


class PackPlan:
    """Where each position of a padded (batch, time) layout lives in the packed one.

    order: the rows by decreasing length (the packed row order); counts and
    offsets: per step, how many rows run and where their block starts;
    flat: each packed position's index in the padded layout flattened as
    row * time + t; previous: for the positions of steps >= 1, the packed
    position of the same row one step earlier.
    """

    def __init__(self, lengths: Sequence[int], time: int, device: torch.device) -> None:
        lengths = [int(n) for n in lengths]
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        max_len = lengths[order[0]] if order else 0
        counts: List[int] = []
        active = len(order)
        for t in range(max_len):
            while active and lengths[order[active - 1]] <= t:
                active -= 1
            counts.append(active)
        offsets = numpy.concatenate([[0], numpy.cumsum(counts)]).astype(numpy.int64)
        order_np = numpy.asarray(order, dtype=numpy.int64)
        flat = numpy.empty(int(offsets[-1]), dtype=numpy.int64)
        previous = numpy.empty(max(0, int(offsets[-1]) - (counts[0] if counts else 0)), dtype=numpy.int64)
        for t, a in enumerate(counts):
            flat[offsets[t] : offsets[t] + a] = order_np[:a] * time + t
            if t:
                start = offsets[t] - counts[0]
                previous[start : start + a] = offsets[t - 1] + numpy.arange(a)
        self.order = torch.from_numpy(order_np).to(device)
        self.inverse = torch.empty_like(self.order)
        self.inverse[self.order] = torch.arange(len(order), device=device)
        self.counts = counts
        self.offsets = offsets[:-1].tolist()
        self.total = int(offsets[-1])
        self.flat = torch.from_numpy(flat).to(device)
        self.previous = torch.from_numpy(previous).to(device)
        self.time = time

    def pack(self, padded: torch.Tensor) -> torch.Tensor:
        """(2, batch, time, ...) -> (2, total, ...)."""
        return padded.reshape(2, -1, *padded.shape[3:]).index_select(1, self.flat)

    def unpack(self, packed: torch.Tensor, batch: int) -> torch.Tensor:
        """(2, total, ...) -> (2, batch, time, ...), zeros past each row's length."""
        padded = packed.new_zeros((2, batch * self.time, *packed.shape[2:]))
        return padded.index_copy(1, self.flat, packed).view(2, batch, self.time, *packed.shape[2:])


def _step_block(buffer: torch.Tensor, offset: int, rows: int) -> torch.Tensor:
    """Step t's (2, rows, F) block of a step-blocked (2 * total, F) buffer.

    A step's product covers both directions in one batched call; its output
    must be contiguous, or the call computes into a temporary and copies. So
    the buffers the products write hold each step's rows as one contiguous
    (direction, row) block, starting at twice the step's packed offset.
    """
    return buffer[2 * offset : 2 * (offset + rows)].view(2, rows, buffer.shape[1])


def _cell_forward(gates: torch.Tensor, c: torch.Tensor, c_raw: torch.Tensor, tanh_c: torch.Tensor, m: torch.Tensor,
                  cell_clip: float, kernel: bool) -> None:
    """One step's cell, in place: gates (rows, 4H) pre-activations -> activations
    (s_i, s_f, s_o, tanh j); c: previous cell -> new (clipped) cell; writes c_raw
    (before the clip), tanh(c) and m = s_o tanh(c)."""
    if kernel:
        cell_kernel.train_forward(gates, c, c_raw, tanh_c, m, cell_clip)
        return
    H = c.shape[1]
    gates[:, : 3 * H].sigmoid_()
    gates[:, 3 * H :].tanh_()
    s_i, s_f, s_o, j = gates.split(H, dim=1)
    torch.addcmul(s_i * j, s_f, c, out=c_raw)
    c.copy_(c_raw.clamp(-cell_clip, cell_clip) if cell_clip else c_raw)
    torch.tanh(c, out=tanh_c)
    torch.mul(s_o, tanh_c, out=m)


def _cell_backward(gates: torch.Tensor, d_gates: torch.Tensor, dm: torch.Tensor, dc: torch.Tensor,
                   c_raw: torch.Tensor, tanh_c: torch.Tensor, c_prev: torch.Tensor, cell_clip: float,
                   clip_prev: bool, kernel: bool) -> None:
    """The gradients of `_cell_forward`: from the activations `gates`, writes the
    pre-activations' gradients into d_gates; dc (the cell gradient from the
    next step) becomes c_prev's gradient, in place. c_prev is clipped first
    where `clip_prev` (it is then the previous step's c_raw; the initial cell
    is read as given)."""
    if kernel:
        cell_kernel.train_backward(gates, d_gates, dm, dc, c_raw, tanh_c, c_prev, cell_clip, clip_prev)
        return
    H = dc.shape[1]
    s_i, s_f, s_o, j = gates.split(H, dim=1)
    d = dm * s_o * (1.0 - tanh_c * tanh_c) + dc
    if cell_clip:
        d = d * (c_raw.abs() <= cell_clip)
        if clip_prev:
            c_prev = c_prev.clamp(-cell_clip, cell_clip)
    torch.cat(
        [d * j * s_i * (1.0 - s_i), d * c_prev * s_f * (1.0 - s_f), dm * tanh_c * s_o * (1.0 - s_o),
         d * s_i * (1.0 - j * j)],
        dim=1,
        out=d_gates,
    )
    dc.copy_(d * s_f)


class LayerRecurrence(torch.autograd.Function):
    """One projected LSTM layer, both directions, over packed positions.

    inputs (2, total, P_in) packed; h0 (2, batch, P), c0 (2, batch, H): rows
    in the plan's order. Returns the outputs (2, total, P) and every row's
    final h and c. Buffers are direction-major (2, total, F) like these,
    except the two the forward products write (`_step_block`).

    A step is one product of `[x_t, h_{t-1}]` with `[W_ih; W_hh]`; its
    backward is one product giving both the input's and h_{t-1}'s gradients;
    the weight gradients are one product over all positions afterwards.
    Products of this size keep each step's rows in cache, where one product
    of every position's inputs up front (a buffer of total x 4H written long
    before it is read) does not.
    """

    @staticmethod
    def forward(ctx: Any, inputs: torch.Tensor, w_ih: torch.Tensor, bias: torch.Tensor, w_hh: torch.Tensor,
                w_proj: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor, plan: PackPlan, clips: Tuple[float, float],
                kernel: bool) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        cell_clip, proj_clip = clips
        H, P, P_in, N = w_hh.shape[2] // 4, w_proj.shape[2], inputs.shape[2], plan.total
        weight = torch.cat([w_ih, w_hh], dim=1)  # (2, P_in + P, 4H)
        full_bias = bias + forget_offset(H, bias)  # (2, 1, 4H)
        # the products' outputs, step-blocked (see `_step_block`); the rest direction-major
        gates = inputs.new_empty((2 * N, 4 * H))  # activations, kept for the backward pass
        h_pre = inputs.new_empty((2 * N, P))
        c_raw, tanh_c, m = (inputs.new_empty((2, N, H)) for _ in range(3))
        out = inputs.new_empty((2, N, P))
        xh = inputs.new_empty((2, h0.shape[1], P_in + P))  # [x_t, h_{t-1}] of the running rows
        xh[:, :, P_in:] = h0
        c = c0.detach().clone(memory_format=torch.contiguous_format)
        for off, a in zip(plan.offsets, plan.counts):
            rows = slice(off, off + a)
            xh[:, :a, :P_in] = inputs[:, rows]
            g = _step_block(gates, off, a)
            torch.baddbmm(full_bias, xh[:, :a], weight, out=g)
            for d in range(2):
                _cell_forward(g[d], c[d, :a], c_raw[d, rows], tanh_c[d, rows], m[d, rows], cell_clip, kernel)
            hp = _step_block(h_pre, off, a)
            torch.bmm(m[:, rows], w_proj, out=hp)
            if proj_clip:
                torch.clamp(hp, -proj_clip, proj_clip, out=out[:, rows])
            else:
                out[:, rows] = hp
            xh[:, :a, P_in:] = out[:, rows]
        ctx.save_for_backward(inputs, weight, w_proj, h0, c0, out)
        ctx.buffers = (gates, c_raw, tanh_c, m, h_pre)
        ctx.plan, ctx.clips, ctx.kernel = plan, clips, kernel
        # rows stop being updated after their last step: xh and c end as every row's final state
        return out, xh[:, :, P_in:].clone(), c

    @staticmethod
    def backward(ctx: Any, grad_out: Optional[torch.Tensor], grad_hn: Optional[torch.Tensor],
                 grad_cn: Optional[torch.Tensor]) -> Tuple[Optional[torch.Tensor], ...]:
        """`gradients`; where a graph of the gradients is built (`create_graph=True`), through
        `OnceDifferentiable`, so that differentiating them again is a clear error."""
        if not torch.is_grad_enabled():
            return LayerRecurrence.gradients(ctx, grad_out, grad_hn, grad_cn)
        # create_graph: the gradients are built as a node that refuses a second differentiation
        incoming = [g for g in (grad_out, grad_hn, grad_cn) if g is not None]
        grads = OnceDifferentiable.apply(lambda: LayerRecurrence.gradients(ctx, grad_out, grad_hn, grad_cn)[:7],
                                         *ctx.saved_tensors, *incoming)
        return (*grads, None, None, None)

    @staticmethod
    def gradients(ctx: Any, grad_out: Optional[torch.Tensor], grad_hn: Optional[torch.Tensor],
                  grad_cn: Optional[torch.Tensor]) -> Tuple[Optional[torch.Tensor], ...]:
        """The gradients of the layer's inputs, weights and initial state (then None for the plan,
        clips and kernel flag), from those of its outputs and final state."""
        inputs, weight, w_proj, h0, c0, out = ctx.saved_tensors  # weight: forward's [W_ih; W_hh]
        gates, c_raw, tanh_c, m, h_pre = ctx.buffers
        plan, (cell_clip, proj_clip), kernel = ctx.plan, ctx.clips, ctx.kernel
        H, P_in = weight.shape[2] // 4, inputs.shape[2]
        # gradients flowing into h and c, per row: from the final state, then from later steps
        dense = torch.contiguous_format
        dh = grad_hn.clone(memory_format=dense) if grad_hn is not None else torch.zeros_like(h0, memory_format=dense)
        dc = grad_cn.clone(memory_format=dense) if grad_cn is not None else torch.zeros_like(c0, memory_format=dense)
        N = plan.total
        d_gates = gates.new_empty((2, N, 4 * H))  # direction-major, for the weight gradients
        d_hpre = h_pre.new_empty((2, N, h_pre.shape[1]))
        grad_inputs = torch.empty_like(inputs)
        dm = gates.new_empty((2 * h0.shape[1], H))
        dxh = gates.new_empty((2 * h0.shape[1], weight.shape[1]))
        for t in range(len(plan.counts) - 1, -1, -1):
            off, a = plan.offsets[t], plan.counts[t]
            rows = slice(off, off + a)
            dh_t = dh[:, :a]
            if grad_out is not None:
                dh_t += grad_out[:, rows]
            dp = d_hpre[:, rows]
            if proj_clip:
                torch.abs(_step_block(h_pre, off, a), out=dp).le_(proj_clip).mul_(dh_t)
            else:
                dp.copy_(dh_t)
            dm_t = _step_block(dm, 0, a)
            torch.bmm(dp, w_proj.transpose(1, 2), out=dm_t)
            g = _step_block(gates, off, a)
            for d in range(2):
                if t:
                    prev = plan.offsets[t - 1]
                    c_prev = c_raw[d, prev : prev + a]
                else:
                    c_prev = c0[d, :a].contiguous()
                _cell_backward(g[d], d_gates[d, rows], dm_t[d], dc[d, :a], c_raw[d, rows], tanh_c[d, rows],
                               c_prev, cell_clip, t > 0, kernel)
            dxh_t = _step_block(dxh, 0, a)
            torch.bmm(d_gates[:, rows], weight.transpose(1, 2), out=dxh_t)
            grad_inputs[:, rows] = dxh_t[:, :, :P_in]
            dh_t.copy_(dxh_t[:, :, P_in:])
        a0 = plan.counts[0] if plan.counts else 0
        xh_all = torch.cat([inputs, torch.cat([h0[:, :a0], out.index_select(1, plan.previous)], dim=1)], dim=2)
        grad_weight = torch.bmm(xh_all.transpose(1, 2), d_gates)
        grad_bias = d_gates.sum(dim=1, keepdim=True)
        grad_w_proj = torch.bmm(m.transpose(1, 2), d_hpre)
        grad_w_ih, grad_w_hh = grad_weight[:, :P_in], grad_weight[:, P_in:]
        return grad_inputs, grad_w_ih, grad_bias, grad_w_hh, grad_w_proj, dh, dc, None, None, None


class OnceDifferentiable(torch.autograd.Function):
    """The gradients of a `LayerRecurrence` computed with `create_graph=True`: `compute()`'s tensors, as
    outputs of a node whose inputs are what they depend on (the layer's saved tensors and the incoming
    gradients), so that a second-order gradient reaches this node and fails with a clear error."""

    MESSAGE = (
        "the training recurrence of the 'mkl', 'onednn', 'onednn+kernel' and 'int8' backends has a "
        "hand-written backward pass without second-order gradients (a gradient of a gradient); "
        "use backend='reference' for them"
    )

    @staticmethod
    def forward(ctx: Any, compute: Callable[[], Sequence[torch.Tensor]],
                *depends_on: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        # every output its own tensor: autograd keeps no view relations between a Function's outputs
        return tuple(t.clone() if t._base is not None else t for t in compute())

    @staticmethod
    def backward(ctx: Any, *grads: Optional[torch.Tensor]) -> NoReturn:
        raise RuntimeError(OnceDifferentiable.MESSAGE)


def run_stack(
    stack: Any, inputs: torch.Tensor, lengths: Sequence[int], state: LSTMState, kernel: bool
) -> Tuple[List[torch.Tensor], LSTMState]:
    """`BiLSTMStack.forward` with gradients: every layer over packed positions.

    kernel: the cell through the compiled kernel (float32 CPU tensors).
    Returns the padded outputs per layer and the final (h, c) per layer, rows
    in their original order.
    """
    _, batch, time, _ = inputs.shape
    plan = PackPlan(lengths, time, inputs.device)
    dropout = stack.dropout if stack.training else 0.0
    clips = (stack.cell_clip or 0.0, stack.proj_clip or 0.0)
    outputs, finals_h, finals_c = [], [], []
    x: Optional[torch.Tensor] = None  # the previous layer's packed output
    # the recurrence writes into buffers of its weights' dtype, which autocast does not
    # reach: under autocast it runs in that dtype (float32 master weights)
    dtype = stack.weight_ih[0].dtype
    for layer in range(stack.n_layers):
        h0 = state.h[layer].index_select(1, plan.order).to(dtype)
        c0 = state.c[layer].index_select(1, plan.order).to(dtype)
        layer_input = (plan.pack(inputs) if x is None else x).to(dtype)
        if dropout:
            layer_input = torch.nn.functional.dropout(layer_input, dropout, True)
        params = (stack.weight_ih[layer], stack.bias[layer], stack.weight_hh[layer], stack.weight_proj[layer])
        out, h_n, c_n = LayerRecurrence.apply(layer_input, *params, h0, c0, plan, clips, kernel)
        if stack.use_skip_connections and x is not None:
            out = out + x
        x = out
        outputs.append(plan.unpack(out, batch))
        finals_h.append(h_n.index_select(1, plan.inverse))
        finals_c.append(c_n.index_select(1, plan.inverse))
    return outputs, LSTMState(tuple(finals_h), tuple(finals_c))


__all__ = ["LayerRecurrence", "OnceDifferentiable", "PackPlan", "run_stack"]
