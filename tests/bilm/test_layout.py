"""`layout.stack_layers`: the (L+1, batch, time, 2P) output in reading order, gradients included."""
import torch

from spacy_elmo.bilm.layout import stack_layers


def _by_definition(inputs, outputs, lengths):
    """Layer 0 the token vector twice (zero past a row's end); the backward
    direction's outputs reversed within each row."""
    _, batch, time, P = inputs.shape
    layers = torch.zeros((len(outputs) + 1, batch, time, 2 * P), dtype=inputs.dtype)
    for b, n in enumerate(lengths):
        layers[0, b, :n] = torch.cat([inputs[0, b, :n], inputs[0, b, :n]], dim=-1)
        for i, out in enumerate(outputs, 1):
            layers[i, b, :, :P] = out[0, b]
            layers[i, b, :n, P:] = out[1, b, :n].flip(0)
            layers[i, b, n:, P:] = out[1, b, n:]
    return layers


def test_stack_layers_matches_its_definition_and_passes_gradients():
    torch.manual_seed(0)
    lengths = [7, 5, 5, 1, 0]
    inputs = torch.randn(2, 5, 7, 3, requires_grad=True)
    outputs = [torch.randn(2, 5, 7, 3, requires_grad=True) for _ in range(2)]
    got = stack_layers(inputs[0], outputs, lengths)
    expected = _by_definition(inputs, outputs, lengths)
    assert torch.equal(got, expected)
    weights = torch.linspace(-1, 1, got.numel()).view_as(got)
    grads = torch.autograd.grad((got * weights).sum(), [inputs, *outputs])
    expected_grads = torch.autograd.grad((expected * weights).sum(), [inputs, *outputs])
    for g, e in zip(grads, expected_grads):
        torch.testing.assert_close(g, e)
