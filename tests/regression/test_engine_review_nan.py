"""Regression: the onednn and onednn+kernel backends (`auto` on x86) turned NaN into finite numbers.

A NaN in the weights (a diverged fine-tune) or the inputs gives NaN layers in
the reference and on `mkl`; `onednn` and `onednn+kernel` gave finite ones: the
compiled kernel's clamps (`_mm256_max_ps(x, lo)` returns lo for a NaN x, and
C's `fmaxf` too) turned NaN into a bound, in inference and in training, and
oneDNN's "hardtanh" post-op clipped NaN to the lower bound. The kernel now
clamps with NaN as the operand that passes through, the projection clip is a
`clamp_` after oneDNN's product, and `int8` (whose quantized operator cannot
carry NaN) runs a non-finite layer in float32.
"""
import pytest
import torch

from spacy_elmo.bilm.engine import backends, cell_kernel, onednn_ops
from spacy_elmo.io import load_bilm

NAN = float("nan")
SENTENCE = [["The", "bank", "was", "closed", "."]]


def _needs(name):
    reason = backends.unavailable_reason(name)
    if reason:
        pytest.skip(f"backend {name}: {reason}")


def test_the_cell_kernel_keeps_nan():
    if not cell_kernel.available():
        pytest.skip("the cell kernel is not built here")
    H = 11  # a vector of 8 and a scalar tail of 3
    for clip in (3.0, 0.0):
        gates, c2, m = torch.zeros(2, 4 * H), torch.zeros(2, H), torch.zeros(2, H)
        gates[0] = NAN
        cell_kernel.update(gates, c2, m, clip)
        assert c2[0].isnan().all() and m[0].isnan().all() and not c2[1].isnan().any()
        gates = torch.zeros(2, 4 * H)
        gates[0] = NAN
        c, raw, tanh_c, m = (torch.zeros(2, H) for _ in range(4))
        cell_kernel.train_forward(gates, c, raw, tanh_c, m, clip)
        assert c[0].isnan().all() and m[0].isnan().all() and not m[1].isnan().any()


def test_onednn_clipped_products_keep_nan():
    _needs("onednn")
    x = torch.ones(3, 8)
    x[1, 2] = NAN
    got = onednn_ops.linear(x, onednn_ops.pack(torch.eye(8)), clip=0.5)
    assert got[1].isnan().all()  # NaN times the zeros of the other columns is NaN too
    assert torch.equal(got[[0, 2]], torch.full((2, 8), 0.5))


@pytest.mark.parametrize("backend", backends.NAMES)
@pytest.mark.parametrize("mode", ["eval", "train"])
@pytest.mark.parametrize("where", ["weight", "state"])
def test_a_nan_comes_out_as_nan_on_every_backend(allennlp_dir, backend, mode, where):
    _needs(backend)
    bilm = load_bilm(allennlp_dir)
    bilm.backend = backend
    bilm.train(mode == "train")
    bilm.lstm.dropout = 0.0
    state = None
    if where == "weight":
        with torch.no_grad():
            bilm.lstm.weight_ih[0][:, 0, :] = NAN  # one input row of the first layer
    else:
        state = bilm.lstm.zero_state(1, torch.zeros(1))
        state.c[0][:, 0, 0] = NAN
    with torch.set_grad_enabled(mode == "train"):
        layers = bilm(SENTENCE, state=state).layers.detach()
    assert layers[1].isnan().any() and layers[2].isnan().any()
    assert not layers[0].isnan().any()  # the token layer reads no NaN
