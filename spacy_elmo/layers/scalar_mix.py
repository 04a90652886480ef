"""ScalarMix: a task's learned weighting of the biLM layers (ELMo eq. 1).

    ELMo_k = gamma * sum_j softmax(s)_j * h_k,j

Input: per doc an array (L+1, n_tokens, width); output: per doc (n_tokens, width).
Options: initial s and gamma, trainable or fixed, layer normalisation of each
layer before mixing, dropout of whole layers during training (a dropped layer
gets zero weight and the rest are renormalised), an L2 penalty lambda * ||s||^2
(the paper's regulariser, applied through the gradient), and top-layer-only.
"""
from typing import Any, Callable, List, Optional, Sequence, Tuple, cast

from thinc.api import Model, Ops, registry
from thinc.types import Floats1d, Floats2d, Floats3d

from .config_value import ConfigValue, setting

InT = List[Floats3d]
OutT = List[Floats2d]


@registry.layers("spacy-elmo.ScalarMix.v1")
def ScalarMix(
    n_layers: Optional[int] = None,
    initial_weights: Optional[Sequence[float]] = None,
    initial_gamma: float = 1.0,
    trainable: bool = True,
    layer_norm: bool = False,
    layer_dropout: float = 0.0,
    l2_lambda: float = 0.0,
    top_layer_only: bool = False,
) -> Model[InT, OutT]:
    """Mix L+1 layers into one with learned softmax weights and a scale.

    n_layers: L+1; inferred from the first batch when omitted.
    initial_weights: the initial s (before the softmax); zeros by default.
    """
    if initial_weights is not None and n_layers is not None and len(initial_weights) != n_layers:
        raise ValueError(f"ScalarMix: {len(initial_weights)} initial weights for {n_layers} layers")
    if not 0.0 <= layer_dropout < 1.0:
        raise ValueError(f"ScalarMix: layer_dropout must be in [0, 1), got {layer_dropout}")
    if l2_lambda < 0:
        raise ValueError(f"ScalarMix: l2_lambda must be >= 0, got {l2_lambda}")
    if initial_weights is not None and n_layers is None:
        n_layers = len(initial_weights)
    return Model(
        "scalar-mix",
        forward,
        init=init,
        dims={"nL": n_layers},
        params={"s": None, "gamma": None},
        attrs={
            "initial_weights": list(initial_weights) if initial_weights is not None else None,
            "initial_gamma": float(initial_gamma),
            # the config decides these when a saved pipeline loads (config_value.py): an override at
            # load, or an edited config.cfg, is not replaced by the saved values
            "trainable": ConfigValue(bool(trainable)),
            "layer_norm": ConfigValue(bool(layer_norm)),
            "layer_dropout": ConfigValue(float(layer_dropout)),
            "l2_lambda": ConfigValue(float(l2_lambda)),
            "top_layer_only": ConfigValue(bool(top_layer_only)),
        },
    )


def init(model: Model[InT, OutT], X: Optional[InT] = None, Y: Optional[OutT] = None) -> Model[InT, OutT]:
    if X is not None and len(X) and not model.has_dim("nL"):
        model.set_dim("nL", int(X[0].shape[0]))
    if not model.has_dim("nL"):
        return model
    n_layers = model.get_dim("nL")
    initial = model.attrs["initial_weights"]
    s = model.ops.alloc1f(n_layers)
    if initial is not None:
        if len(initial) != n_layers:
            raise ValueError(f"ScalarMix: {len(initial)} initial weights but the biLM has {n_layers} layers")
        s[:] = model.ops.asarray1f(initial)
    model.set_param("s", s)
    gamma = model.ops.alloc1f(1)
    gamma[0] = model.attrs["initial_gamma"]
    model.set_param("gamma", gamma)
    return model


def mix_weights(model: Model) -> Tuple[Floats1d, float]:
    """(softmax(s), gamma) as the model currently holds them (top-layer-only respected)."""
    s = model.get_param("s")
    weights = cast(Floats1d, model.ops.softmax(s))
    if setting(model, "top_layer_only"):
        weights = model.ops.alloc1f(s.shape[0])
        weights[-1] = 1.0
    return weights, float(model.get_param("gamma")[0])


def forward(model: Model[InT, OutT], Xs: InT, is_train: bool) -> Tuple[OutT, Callable]:
    ops = model.ops
    if not Xs:
        return [], lambda dYs: []
    if not model.has_param("s") or model.get_param("s") is None:
        model.initialize(X=Xs)
    n_layers = model.get_dim("nL")
    for X in Xs:
        if X.shape[0] != n_layers:
            raise ValueError(
                f"ScalarMix is set up for {n_layers} layers but the biLM gives {X.shape[0]} "
                f"(array of shape {X.shape}): check its n_layers / initial_weights"
            )
    lengths = [X.shape[1] for X in Xs]
    X = ops.xp.concatenate(Xs, axis=1) if len(Xs) > 1 else Xs[0]  # (L+1, N, w)
    s = model.get_param("s")
    gamma = model.get_param("gamma")
    top_only = bool(setting(model, "top_layer_only"))
    if top_only:
        weights = ops.alloc1f(n_layers)
        weights[-1] = 1.0
        keep = None
    else:
        keep = None
        logits = s
        layer_dropout = float(setting(model, "layer_dropout"))
        if is_train and layer_dropout > 0:
            keep = ops.xp.random.uniform(0, 1, n_layers) >= layer_dropout
            if not keep.any():
                keep[ops.xp.random.randint(n_layers)] = True
            logits = ops.xp.where(keep, s, -1e9).astype(s.dtype)
        weights = cast(Floats1d, ops.softmax(logits))
    if setting(model, "layer_norm"):
        normed, norm_backprop = _layer_norm(ops, X)
    else:
        normed, norm_backprop = X, None
    mixed = ops.xp.tensordot(weights, normed, axes=(0, 0))  # (N, w)
    Y = (gamma[0] * mixed).astype("float32")
    Ys = _split(ops, Y, lengths)

    def backprop(dYs: OutT) -> InT:
        dY = ops.xp.concatenate(dYs, axis=0) if len(dYs) > 1 else dYs[0]
        if setting(model, "trainable") and not top_only:
            d_gamma = (dY * mixed).sum()
            d_weights = ops.xp.tensordot(normed, dY, axes=([1, 2], [0, 1])) * gamma[0]  # (L+1,)
            # softmax backward: dz = w * (dw - <w, dw>)
            d_s = weights * (d_weights - (weights * d_weights).sum())
            if keep is not None:
                d_s = d_s * keep
            l2_lambda = float(setting(model, "l2_lambda"))
            if l2_lambda:
                d_s = d_s + 2.0 * l2_lambda * s
            model.inc_grad("s", d_s.astype("float32"))
            model.inc_grad("gamma", ops.asarray1f([d_gamma]))
        d_normed = ops.xp.einsum("l,nw->lnw", weights * gamma[0], dY)
        dX = norm_backprop(d_normed) if norm_backprop is not None else d_normed
        return _split(ops, dX.astype("float32"), lengths, axis=1)

    return Ys, backprop


def _split(ops: Ops, array: Any, lengths: List[int], axis: int = 0) -> list:
    out = []
    start = 0
    for n in lengths:
        index = [slice(None)] * array.ndim
        index[axis] = slice(start, start + n)
        out.append(array[tuple(index)])
        start += n
    return out


def _layer_norm(ops: Ops, X: Any, eps: float = 1e-12) -> Tuple[Floats3d, Callable[[Floats3d], Floats3d]]:
    """Normalise every token vector of every layer to zero mean, unit variance."""
    mean = X.mean(axis=-1, keepdims=True)
    centered = X - mean
    var = (centered * centered).mean(axis=-1, keepdims=True)
    inv_std = 1.0 / ops.xp.sqrt(var + eps)
    normed = centered * inv_std

    def backprop(d_normed: Floats3d) -> Floats3d:
        width = X.shape[-1]
        d_centered = d_normed * inv_std
        return d_centered - d_centered.mean(axis=-1, keepdims=True) - normed * (
            (d_normed * normed).sum(axis=-1, keepdims=True) / width
        ) * inv_std

    return normed, backprop


__all__ = ["ScalarMix", "mix_weights"]
