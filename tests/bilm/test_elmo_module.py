"""spacy_elmo.bilm.ElmoModule and TorchScalarMix: ELMo for plain PyTorch models (AllenNLP's `Elmo` interface)."""
import io

import numpy
import pytest
import torch

from spacy_elmo import load_bilm
from spacy_elmo.bilm import BiLM, BiLMConfig, ElmoModule, TorchScalarMix

SENTENCES = [["She", "sat", "on", "the", "bank"], ["It", "rose"], []]


def _bilm(seed: int = 0) -> BiLM:
    bilm = BiLM(BiLMConfig(lstm_dim=16, projection_dim=8, n_layers=2, filters=((1, 4), (2, 4)), n_highway=1,
                           dropout=0.5))
    bilm.reset_parameters(seed)
    return bilm


def _mixed(layers: torch.Tensor, scalars: torch.Tensor, gamma: float) -> torch.Tensor:
    weights = torch.softmax(scalars, dim=0)
    return gamma * sum(w * layer for w, layer in zip(weights, layers))


def test_representations_are_the_papers_mix_of_the_layers_with_a_mask():
    elmo = ElmoModule(_bilm(), num_output_representations=2).eval()
    with torch.no_grad():
        elmo.scalar_mixes[1].scalar_parameters.copy_(torch.tensor([1.0, -1.0, 0.5]))
        elmo.scalar_mixes[1].gamma.fill_(2.0)
    out = elmo(SENTENCES)
    layers = elmo.bilm(SENTENCES).layers
    assert out["mask"].tolist() == [[True] * 5, [True, True, False, False, False], [False] * 5]
    assert [r.shape for r in out["elmo_representations"]] == [(3, 5, elmo.get_output_dim())] * 2
    for mix, got in zip(elmo.scalar_mixes, out["elmo_representations"]):
        expected = _mixed(layers, mix.scalar_parameters.detach(), float(mix.gamma.detach()))
        torch.testing.assert_close(got, expected)
    assert not out["elmo_representations"][0][1, 2:].any()  # zero past a row's length


def test_the_embedded_model_agrees_with_embed():
    bilm = load_bilm()
    elmo = ElmoModule(bilm).eval()
    got = elmo([["She", "sat", "on", "the", "bank"]])["elmo_representations"][0][0].detach().numpy()
    layers = bilm.embed([["She", "sat", "on", "the", "bank"]])[0]
    numpy.testing.assert_allclose(got, layers.mean(axis=0), rtol=1e-5, atol=1e-6)


def test_dropout_in_training_only_and_a_frozen_biLM_stays_in_eval_mode():
    elmo = ElmoModule(_bilm(), dropout=0.5)
    elmo.train()
    assert not elmo.bilm.training  # frozen: no dropout inside the biLM, no autograd
    torch.manual_seed(0)
    trained = elmo(SENTENCES)["elmo_representations"][0]
    elmo.eval()
    predicted = elmo(SENTENCES)["elmo_representations"][0]
    assert (trained[0] == 0).float().mean() > 0.3  # about half the values dropped
    assert not torch.equal(trained, predicted)
    assert torch.equal(predicted, elmo(SENTENCES)["elmo_representations"][0])


def test_a_frozen_biLM_trains_only_the_mixes():
    elmo = ElmoModule(_bilm(), dropout=0.0)
    elmo.train()
    elmo(SENTENCES)["elmo_representations"][0].sum().backward()
    mix = elmo.scalar_mixes[0]
    assert mix.scalar_parameters.grad is not None and mix.gamma.grad is not None
    assert all(p.grad is None and not p.requires_grad for p in elmo.bilm.parameters())


def test_requires_grad_fine_tunes_the_biLM():
    elmo = ElmoModule(_bilm(), requires_grad=True, dropout=0.0)
    elmo.train()
    assert elmo.bilm.training
    elmo(SENTENCES)["elmo_representations"][0].pow(2).sum().backward()
    grads = [p.grad for p in elmo.bilm.parameters() if p.requires_grad]
    assert grads and all(g is not None for g in grads) and any(bool(g.abs().sum()) for g in grads)


def test_fixed_scalar_mix_parameters_do_not_train():
    elmo = ElmoModule(_bilm(), scalar_mix_parameters=[0.0, -1e9, -1e9], dropout=0.0).eval()
    mix = elmo.scalar_mixes[0]
    assert not mix.scalar_parameters.requires_grad and not mix.gamma.requires_grad
    got = elmo(SENTENCES)["elmo_representations"][0]
    torch.testing.assert_close(got, elmo.bilm(SENTENCES).layers[0])  # layer 0 alone


def test_layer_norm_uses_the_real_positions_and_the_boundaries_as_allennlp():
    """AllenNLP mixes the layers with the boundaries, then removes them: the statistics count them."""
    elmo = ElmoModule(_bilm(), do_layer_norm=True, dropout=0.0).eval()
    out = elmo(SENTENCES)
    bounded = elmo.bilm(SENTENCES, keep_boundaries=True)
    real = bounded.layers[:, bounded.mask()]  # (layers, real positions and boundaries, width)
    mean = real.mean(dim=(1, 2), keepdim=True)
    std = real.std(dim=(1, 2), unbiased=False, keepdim=True)
    normalised = ((bounded.layers - mean[:, :, None]) / std[:, :, None]).mean(dim=0)  # (batch, time + 2, w)
    mask = out["mask"]
    assert mask.tolist() == [[True] * 5, [True, True, False, False, False], [False] * 5]
    for row, length in enumerate([5, 2, 0]):
        got = out["elmo_representations"][0][row]
        torch.testing.assert_close(got[:length], normalised[row, 1:1 + length], rtol=1e-4, atol=1e-5)
        assert not got[length:].any()  # zero past the sentence
    kept = ElmoModule(elmo.bilm, do_layer_norm=True, dropout=0.0, keep_sentence_boundaries=True).eval()
    with_boundaries = kept(SENTENCES)["elmo_representations"][0]
    torch.testing.assert_close(with_boundaries[0, :7], normalised[0, :7], rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="needs the mask"):
        elmo.scalar_mixes[0](bounded.layers)


def test_a_mix_takes_a_list_of_layers_of_any_rank():
    mix = TorchScalarMix(2, initial=[0.0, 0.0])
    a, b = torch.ones(3, 4), torch.zeros(3, 4)
    torch.testing.assert_close(mix([a, b]), torch.full((3, 4), 0.5), check_dtype=False)


def test_sentence_boundaries_widen_the_time_axis():
    elmo = ElmoModule(_bilm(), keep_sentence_boundaries=True).eval()
    out = elmo([["a", "b"], ["c"]])
    assert out["elmo_representations"][0].shape == (2, 4, elmo.get_output_dim())
    assert out["mask"].tolist() == [[True] * 4, [True, True, True, False]]


def test_state_dict_round_trip_gives_the_same_output():
    elmo = ElmoModule(_bilm(0), num_output_representations=2).eval()
    with torch.no_grad():
        elmo.scalar_mixes[0].scalar_parameters.copy_(torch.tensor([0.3, 0.2, -0.4]))
    buffer = io.BytesIO()
    torch.save(elmo.state_dict(), buffer)
    other = ElmoModule(_bilm(1), num_output_representations=2).eval()
    other.load_state_dict(torch.load(io.BytesIO(buffer.getvalue()), weights_only=True))
    for a, b in zip(elmo(SENTENCES)["elmo_representations"], other(SENTENCES)["elmo_representations"]):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("kwargs,match", [
    ({"num_output_representations": 0}, "num_output_representations"),
    ({"dropout": 1.0}, "dropout"),
    ({"scalar_mix_parameters": [0.0, 1.0]}, "2 initial scalars for 3 layers"),
])
def test_bad_settings_are_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ElmoModule(_bilm(), **kwargs)


def test_a_mix_of_the_wrong_number_of_layers_is_refused():
    with pytest.raises(ValueError, match="4 layers given to a mix of 3"):
        TorchScalarMix(3)(torch.zeros(4, 1, 2, 5))
