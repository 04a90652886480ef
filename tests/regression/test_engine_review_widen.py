"""Regression: `widen_projection` returned a float32 CPU biLM whatever the source's dtype and device.

The widened biLM was built with the defaults and the source's values copied
in, so a float64 model came back float32 (its values rounded) and a GPU
model on the CPU. The widened biLM is now moved to the source's device and
dtype before the values are copied.
"""
import numpy
import pytest
import torch

from spacy_elmo.bilm.widen import old_dims, widen_projection
from tests.bilm.word_tables import layers, table_bilm


def test_a_float64_biLM_widens_to_float64():
    bilm = table_bilm(seed=3).double()
    bilm.eval()
    wide = widen_projection(bilm, 13)
    assert {p.dtype for p in wide.parameters()} == {torch.float64}
    for name, value in bilm.state_dict().items():  # old values in place, not rounded through float32
        widened = wide.state_dict()[name]
        assert torch.equal(widened[tuple(slice(0, n) for n in value.shape)], value), name
    keep = old_dims(8, 13)
    for old, widened in zip(layers(bilm), layers(wide)):
        assert widened.dtype == numpy.float64
        numpy.testing.assert_allclose(widened[..., keep], old, rtol=0, atol=1e-12)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_a_gpu_biLM_widens_on_the_gpu():
    bilm = table_bilm(seed=3).cuda()
    wide = widen_projection(bilm, 13)
    assert {p.device.type for p in wide.parameters()} == {"cuda"}
