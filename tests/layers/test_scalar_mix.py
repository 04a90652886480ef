"""ScalarMix: forward values, gradients by finite differences, and every option."""
import numpy
import pytest
from thinc.api import NumpyOps

from spacy_elmo.layers import ScalarMix, mix_weights


def _data(seed=0, lengths=(3, 5)):
    rng = numpy.random.default_rng(seed)
    return [rng.normal(size=(3, n, 4)).astype("float32") for n in lengths]


def _loss(model, Xs, dYs):
    Ys, _ = model(Xs, is_train=False)
    return float(sum((y.astype("float64") * d).sum() for y, d in zip(Ys, dYs)))


@pytest.mark.parametrize("layer_norm", [False, True])
def test_forward_and_gradients(layer_norm):
    Xs = _data()
    model = ScalarMix(initial_weights=[0.1, -0.3, 0.5], initial_gamma=1.3, layer_norm=layer_norm)
    model.initialize(X=Xs)
    Ys, backprop = model(Xs, is_train=True)
    w = numpy.exp([0.1, -0.3, 0.5])
    w /= w.sum()
    if not layer_norm:
        numpy.testing.assert_allclose(Ys[0], 1.3 * numpy.tensordot(w, Xs[0], 1), rtol=1e-5)
    rng = numpy.random.default_rng(1)
    dYs = [rng.normal(size=y.shape).astype("float32") for y in Ys]
    dXs = backprop(dYs)
    eps = 1e-3
    for name in ("s", "gamma"):
        grad = model.get_grad(name)
        param = model.get_param(name)
        for i in range(param.shape[0]):
            old = param[i]
            param[i] = old + eps
            up = _loss(model, Xs, dYs)
            param[i] = old - eps
            down = _loss(model, Xs, dYs)
            param[i] = old
            assert grad[i] == pytest.approx((up - down) / (2 * eps), rel=2e-2, abs=2e-3)
    for k in range(2):
        for index in [(0, 0, 0), (2, 1, 3), (1, 2, 2)]:
            old = Xs[k][index]
            Xs[k][index] = old + eps
            up = _loss(model, Xs, dYs)
            Xs[k][index] = old - eps
            down = _loss(model, Xs, dYs)
            Xs[k][index] = old
            assert dXs[k][index] == pytest.approx((up - down) / (2 * eps), rel=2e-2, abs=2e-3)


def test_defaults_uniform_and_inferred_layers():
    Xs = _data()
    model = ScalarMix()
    Ys, _ = model(Xs, is_train=False)  # initializes itself on first use
    numpy.testing.assert_allclose(Ys[1], Xs[1].mean(0), rtol=1e-5)
    weights, gamma = mix_weights(model)
    numpy.testing.assert_allclose(weights, [1 / 3] * 3, rtol=1e-6)
    assert gamma == 1.0 and model.get_dim("nL") == 3


def test_fixed_weights_get_no_gradient():
    Xs = _data()
    model = ScalarMix(trainable=False)
    model.initialize(X=Xs)
    Ys, backprop = model(Xs, is_train=True)
    dXs = backprop([numpy.ones_like(y) for y in Ys])
    assert not model.has_grad("s") and not model.has_grad("gamma")
    numpy.testing.assert_allclose(dXs[0], numpy.full_like(Xs[0], 1 / 3), rtol=1e-5)


def test_top_layer_only():
    Xs = _data()
    model = ScalarMix(top_layer_only=True, initial_gamma=2.0)
    Ys, _ = model(Xs, is_train=False)
    numpy.testing.assert_allclose(Ys[0], 2.0 * Xs[0][-1], rtol=1e-6)


def test_layer_dropout_only_in_training():
    Xs = _data()
    model = ScalarMix(layer_dropout=0.5)
    model.initialize(X=Xs)
    numpy.random.seed(0)
    train_outputs = {tuple(numpy.round(model(Xs, is_train=True)[0][0][0], 5)) for _ in range(20)}
    assert len(train_outputs) > 1  # different layers dropped on different calls
    a, _ = model(Xs, is_train=False)
    b, _ = model(Xs, is_train=False)
    numpy.testing.assert_array_equal(a[0], b[0])


def test_l2_penalty_adds_to_the_gradient():
    Xs = _data()
    plain = ScalarMix(initial_weights=[0.2, 0.0, -0.4])
    penalised = ScalarMix(initial_weights=[0.2, 0.0, -0.4], l2_lambda=0.5)
    for model in (plain, penalised):
        model.initialize(X=Xs)
        Ys, backprop = model(Xs, is_train=True)
        backprop([numpy.ones_like(y) for y in Ys])
    expected = 2 * 0.5 * numpy.array([0.2, 0.0, -0.4])
    numpy.testing.assert_allclose(penalised.get_grad("s") - plain.get_grad("s"), expected, rtol=1e-5)


def test_empty_batch_and_empty_docs():
    model = ScalarMix()
    assert model([], is_train=False)[0] == []
    Ys, backprop = model([numpy.zeros((3, 0, 4), dtype="float32")], is_train=True)
    assert Ys[0].shape == (0, 4)
    assert backprop([numpy.zeros((0, 4), dtype="float32")])[0].shape == (3, 0, 4)


def test_ops_agnostic_numpy_ops():
    model = ScalarMix()
    model.ops = NumpyOps()
    assert model(_data(), is_train=False)[0][0].dtype == numpy.float32


def test_bad_mix_options():
    with pytest.raises(ValueError, match="layer_dropout"):
        ScalarMix(layer_dropout=1.0)
    with pytest.raises(ValueError, match="l2_lambda"):
        ScalarMix(l2_lambda=-1)
