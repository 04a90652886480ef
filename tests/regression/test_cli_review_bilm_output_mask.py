"""Regression: docs/python-api.md named a `BiLMOutput.mask()` that did not exist. It now does: a
(batch, time) boolean tensor, True at each row's real positions, on the layers' device."""
import torch

from spacy_elmo.bilm.layout import BiLMOutput


def test_mask_marks_each_rows_real_positions():
    layers = torch.zeros(3, 3, 4, 2)
    out = BiLMOutput(layers, torch.tensor([4, 1, 0]))
    mask = out.mask()
    assert mask.dtype == torch.bool and mask.shape == (3, 4) and mask.device == layers.device
    assert mask.tolist() == [[True] * 4, [True, False, False, False], [False] * 4]
    assert [m.sum().item() for m in mask] == [u.shape[1] for u in out.unpadded()]


def test_mask_of_a_model_output_selects_exactly_the_unpadded_vectors(allennlp_bilm):
    sentences = [["The", "bank", "is", "closed"], ["Money"], ["A", "b"]]
    with torch.no_grad():
        for keep_boundaries in (False, True):
            out = allennlp_bilm(sentences, keep_boundaries=keep_boundaries)
            mask = out.mask()
            assert torch.equal(out.layers[:, mask], torch.cat(out.unpadded(), dim=1))
            assert not out.layers[:, ~mask].any()  # zeros past each row's length
