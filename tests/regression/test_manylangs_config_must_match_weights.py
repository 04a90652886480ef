"""Regression: an ELMoForManyLangs model whose architecture file declared fewer layers than its weights
held (n_highway 1 or 0 for two highway layers, n_layers 1 for two LSTM layers, one filter fewer) loaded
without a word and gave other vectors (1.3 to 2.1 off), and `convert` wrote that model; int() also
read n_highway 1.7 as 1 and "2" as 2. The published loader refuses such a pair ("the weights and the
options belong to different models"); this one now does too, naming the layers left over, and the
counts must be whole numbers."""
import copy
import json

import pytest

from spacy_elmo.io import WeightsError, load_bilm
from tests.io.manylangs_model import ARCHITECTURE, write_manylangs_model

SENTENCE = [["我们", "在", "bank", "旁边"]]


@pytest.mark.parametrize("section, key, value, named", [
    ("token_embedder", "n_highway", 1, "highways._layers.1"),
    ("token_embedder", "n_highway", 0, "highways._layers.0"),
    ("encoder", "n_layers", 1, "_layer_1."),
    ("token_embedder", "n_highway", 1.7, "'n_highway' must be an integer"),
    ("token_embedder", "n_highway", "2", "'n_highway' must be an integer"),
    ("encoder", "dim", 16.9, "'dim' must be an integer"),
])
def test_an_architecture_of_another_model_is_refused(tmp_path, section, key, value, named):
    directory = write_manylangs_model(tmp_path / "model")
    arch = copy.deepcopy(ARCHITECTURE)
    arch[section][key] = value
    (directory / "cnn_tiny.json").write_text(json.dumps(arch))
    with pytest.raises(WeightsError, match=named):
        load_bilm(directory)


def test_the_intact_model_still_loads(tmp_path):
    layers = load_bilm(write_manylangs_model(tmp_path / "model")).embed(SENTENCE)[0]
    assert layers.shape[:2] == (ARCHITECTURE["encoder"]["n_layers"] + 1, 4)
