"""What every engine does: the seam between the biLM's maths and how it is computed.

An engine computes the LSTM stack and the token encoder's dense products for
one biLM. The model asks it for exactly three things:

* `infer_stack(stack, rows, lengths, state)`: every layer, no autograd (eval mode);
* `train_stack(stack, rows, lengths, state)`: every layer with autograd (training mode);
* `encoder_product(bias, x, weight)`: `bias + x @ weight` for the token encoder
  in eval mode.

The base class drives inference layer by layer: it sorts the rows by
decreasing length (so the rows still running at a step are a prefix of the
batch), runs `infer_layer` for each layer, adds the skip connections and puts
the rows back in their order. A backend is one subclass that says how one
layer runs (`infer_layer`, `train_stack`) and which row rule pads its
products (`library`). Whatever an engine prepares from the weights (packed
or scaled copies) it keeps between calls in `kept_weights`, keyed on the
parameters' identity and version (weights_key.py), so an update of the weights
is never missed. Without gradients every product is padded to
`product_rows` rows, so that a row's numbers never depend on its batch.
"""
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

import torch

from ..lstm import BiLSTMStack, LSTMState, TokenRows
from . import loops
from .product_rows import pad_rows, product_rows
from .weights_key import WeightsKey

LayerOutput = Tuple[torch.Tensor, torch.Tensor, torch.Tensor]
StackOutput = Tuple[List[torch.Tensor], LSTMState]

# layers whose parameters take at most this many bytes keep their prepared inference
# weights between calls (the small and embedded shapes; not the original 4096/512 ones)
KEPT_WEIGHTS_MAX_BYTES = 64 << 20


class LayerInputs(NamedTuple):
    """What one layer reads: dense inputs `x` (2, batch, time, P), or for the first
    layer of an engine that `reads_token_table`, `table` = (token table (n, P),
    index (2, batch, time)); the initial state h0 (2, batch, P), c0 (2, batch, H);
    each row's length (rows sorted by decreasing length)."""

    x: Optional[torch.Tensor]
    table: Optional[Tuple[torch.Tensor, torch.Tensor]]
    h0: torch.Tensor
    c0: torch.Tensor
    lengths: List[int]

    @property
    def like(self) -> torch.Tensor:
        """A tensor of the layer's dtype and device."""
        return self.x if self.x is not None else self.h0


def run_loop(stack: BiLSTMStack, weights: Any, step: Callable[..., torch.Tensor], library: str,
             inputs: LayerInputs) -> LayerOutput:
    """`loops.run_layer` over one layer's inputs with the engine's prepared weights and step."""
    return loops.run_layer(weights, step, library, inputs=inputs.x, table=inputs.table, h0=inputs.h0, c0=inputs.c0,
                           lengths=inputs.lengths, clips=stack.clips)


class Engine:
    """How one biLM computes. Subclasses are the backends; `setting` is what the user chose."""

    name = ""

    def __init__(self, setting: Optional[str] = None) -> None:
        self.setting = setting or self.name
        self._kept: Dict[Tuple[int, str, torch.dtype, torch.device], Tuple[WeightsKey, Any]] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(setting={self.setting!r})"

    # -- what a backend defines ------------------------------------------------------------
    def library(self, like: torch.Tensor) -> str:
        """Whose row rule pads the products for tensors like `like`: "mkl" or "onednn"."""
        return "mkl"

    def reads_token_table(self, like: torch.Tensor) -> bool:
        """Whether the first layer reads (token table, index) rather than dense inputs."""
        return False

    def infer_layer(self, stack: BiLSTMStack, layer: int, inputs: LayerInputs) -> LayerOutput:
        """One layer without gradients, rows sorted by decreasing length: its outputs
        (2, batch, time, P), zeros past each row's length, and every row's final h, c."""
        raise NotImplementedError

    def train_stack(self, stack: BiLSTMStack, rows: TokenRows, lengths: List[int], state: LSTMState) -> StackOutput:
        """Every layer with autograd (and the stack's dropout), rows in any order."""
        raise NotImplementedError

    # -- what every engine shares ----------------------------------------------------------
    def infer_stack(self, stack: BiLSTMStack, rows: TokenRows, lengths: List[int], state: LSTMState) -> StackOutput:
        """Every layer without gradients, rows in any order (see the module docstring). The initial
        state is read in the dtype of the token vectors (`state_like`), as every backend reads it."""
        state = state_like(state, rows.table)
        batch = rows.index.shape[1]
        order = sorted(range(batch), key=lambda i: -lengths[i])
        if order == list(range(batch)):
            return self._infer_sorted(stack, rows, lengths, state)
        device = rows.table.device
        order_t = torch.tensor(order, device=device)
        sorted_rows = TokenRows(rows.table, rows.index[:, order_t.to(rows.index.device)])
        outputs, final = self._infer_sorted(stack, sorted_rows, [lengths[i] for i in order], state.select(order_t))
        inverse = torch.empty_like(order_t)
        inverse[order_t] = torch.arange(batch, device=device)
        return [o[:, inverse] for o in outputs], final.select(inverse)

    def _infer_sorted(self, stack: BiLSTMStack, rows: TokenRows, lengths: List[int], state: LSTMState) -> StackOutput:
        table = (rows.table, rows.index) if self.reads_token_table(rows.table) else None
        x = None if table is not None else rows.gather()
        return run_layers(stack, x, state, lambda layer, layer_x, h0, c0: self.infer_layer(
            stack, layer, LayerInputs(layer_x, table if layer == 0 else None, h0, c0, lengths)))

    def encoder_product(self, bias: torch.Tensor, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """`bias + x @ weight` without gradients, at `product_rows` rows."""
        n = x.shape[0]
        padded = pad_rows(x, product_rows(n, self.library(x), "encoder"))
        return self._product(bias, padded, weight)[:n]

    def _product(self, bias: torch.Tensor, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return torch.addmm(bias, x, weight)

    def kept_weights(self, stack: BiLSTMStack, layer: int, like: torch.Tensor, kind: str,
                     prepare: Callable[..., Any]) -> Any:
        """`prepare(W_ih, W_hh, bias, W_proj)` of one layer, kept between calls for layers of at most
        KEPT_WEIGHTS_MAX_BYTES (larger ones are prepared per call: a kept copy
        would double their memory). The key is the parameters' identity and
        version, the inputs' dtype and device, and `kind` (what was prepared).
        One copy is kept per layer, kind, dtype and device, so that calls in two
        precisions (float32 and bfloat16 batches in turn) do not prepare anew each time."""
        params = stack.layer_parameters(layer)
        key = WeightsKey(params, like.dtype, like.device, kind)
        slot = (layer, kind, like.dtype, like.device)
        kept = self._kept.get(slot)
        if kept is not None and kept[0] == key:
            return kept[1]
        prepared = prepare(*(p.detach().to(like.dtype) for p in params))
        if sum(p.numel() * p.element_size() for p in params) <= KEPT_WEIGHTS_MAX_BYTES:
            self._kept[slot] = (key, prepared)
        return prepared

    def clear(self) -> None:
        """Forget the kept weights."""
        self._kept = {}

    def __reduce__(self) -> Tuple[Callable[[str], "Engine"], Tuple[str]]:
        """Pickled (and copied) as its setting alone: unpickling makes the engine the setting names
        on the machine that unpickles, so `auto` resolves there again (a model pickled where it
        resolved to `onednn+kernel` runs where the kernel is not built), and an explicit backend
        that cannot run there is a `BackendError` at once. Kept weights are not carried: oneDNN's
        packed weights have no storage to copy or pickle; they are rebuilt on use."""
        from . import make_engine  # the package imports this module

        return (make_engine, (self.setting,))


def run_layers(
    stack: BiLSTMStack, x: Optional[torch.Tensor], state: LSTMState,
    layer_fn: Callable[[int, Optional[torch.Tensor], torch.Tensor, torch.Tensor], LayerOutput],
    dropout: float = 0.0,
) -> StackOutput:
    """Layer after layer: `layer_fn(layer, inputs, h0, c0)`, the skip connections of
    every layer but the first, and dropout on each layer's inputs where given."""
    outputs: List[torch.Tensor] = []
    finals_h, finals_c = [], []
    for layer in range(stack.n_layers):
        layer_input = torch.nn.functional.dropout(x, dropout, True) if dropout and x is not None else x
        out, h_n, c_n = layer_fn(layer, layer_input, state.h[layer], state.c[layer])
        if stack.use_skip_connections and x is not None and layer > 0:
            out = out + x
        outputs.append(out)
        finals_h.append(h_n)
        finals_c.append(c_n)
        x = out
    return outputs, LSTMState(tuple(finals_h), tuple(finals_c))


def state_like(state: LSTMState, like: torch.Tensor) -> LSTMState:
    """`state` in the dtype of `like` (the token vectors the layers read).

    A float64 state given to a float32 model (or a state carried from a call in
    another precision) is read in the model's precision by every backend, where
    the fast loops would otherwise mix dtypes (the compiled kernel and oneDNN
    refuse them) and the reference's products fail. A state already of that dtype
    (the zero state, the kept start state) is the same tensors."""
    dtype = like.dtype
    if all(t.dtype == dtype for t in (*state.h, *state.c)):
        return state
    return LSTMState(tuple(t.to(dtype) for t in state.h), tuple(t.to(dtype) for t in state.c))


def runs_onednn(like: torch.Tensor) -> bool:
    """oneDNN's products serve float32 CPU tensors outside autocast, where PyTorch allows them."""
    return bool(like.device.type == "cpu" and like.dtype == torch.float32
                and not torch.is_autocast_enabled("cpu") and torch.backends.mkldnn.enabled)


__all__ = ["Engine", "KEPT_WEIGHTS_MAX_BYTES", "LayerInputs", "LayerOutput", "StackOutput", "run_layers", "run_loop",
           "runs_onednn", "state_like"]
