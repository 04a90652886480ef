"""The backend setting: names, availability, what runs for which tensors, and the product heights."""
import pytest
import torch

from spacy_elmo.bilm import BiLM, BiLMConfig, backends, onednn
from spacy_elmo.bilm.backends import Backend, BackendError
from spacy_elmo.bilm.heights import MKL_MIN_ROWS, ONEDNN_MIN_ROWS, TABLE_GRANULE, product_rows


def test_auto_is_the_best_available_and_reference_and_mkl_run_anywhere():
    available = backends.available()
    assert available[:2] == ["reference", "mkl"]
    assert backends.resolve("auto") == available[-1]
    assert [b for b in backends.BACKENDS if b in available] == available


def test_unknown_or_unavailable_backends_are_one_clear_error(monkeypatch):
    with pytest.raises(BackendError, match="unknown backend 'fast'; choose one of"):
        backends.check("fast")
    with pytest.raises(BackendError, match="unknown backend"):
        BiLM(BiLMConfig(lstm_dim=8, projection_dim=4, n_layers=1, filters=((1, 4),), n_highway=0), backend="MKL")

    def broken(*args):
        raise RuntimeError("could not create a primitive descriptor")

    monkeypatch.setattr(onednn, "_WORKS", None)
    monkeypatch.setattr(onednn, "_LINEAR", broken)
    assert backends.resolve("auto") == "mkl"
    with pytest.raises(BackendError, match="backend 'onednn': this PyTorch build's oneDNN"):
        backends.check("onednn")


def test_what_runs_depends_on_the_tensors():
    if "onednn+kernel" not in backends.available():
        pytest.skip("needs the onednn+kernel backend")
    x = torch.zeros(3, 4)
    with torch.no_grad():
        assert backends.select("auto", x) == Backend("onednn+kernel")
        assert backends.select("onednn", x) == Backend("onednn")
        assert backends.select("onednn", x.double()) == Backend("mkl")  # oneDNN computes float32 only
        with torch.autocast("cpu", dtype=torch.bfloat16):
            assert backends.select("onednn+kernel", x) == Backend("mkl")
        assert backends.select("reference", x) == Backend("reference")
    # with gradients: no oneDNN products (no autograd); the kernel serves the training loop's cell
    assert backends.select("onednn", x) == Backend("mkl")
    assert backends.select("onednn+kernel", x).kernel
    assert not backends.select("onednn+kernel", x.double()).kernel


def test_setting_the_backend_reaches_every_part_and_clears_computed_values(allennlp_bilm):
    allennlp_bilm.enable_cache()
    allennlp_bilm.embed([["A", "test", "."]])
    assert allennlp_bilm._start is not None and allennlp_bilm.lstm._kept_weights
    allennlp_bilm.backend = "reference"
    assert allennlp_bilm.lstm.backend == allennlp_bilm.token_encoder.backend == "reference"
    assert allennlp_bilm._start is None and not allennlp_bilm.lstm._kept_weights
    assert allennlp_bilm.token_cache is not None and not len(allennlp_bilm.token_cache)


@pytest.mark.parametrize("library,product", [("onednn", "step"), ("onednn", "table"), ("mkl", "step"),
                                             ("mkl", "encoder")])
def test_product_heights_are_few_never_below_the_minimum_and_non_decreasing(library, product):
    heights = [product_rows(n, library, product) for n in range(0, 20000)]
    assert all(h >= max(n, 1) for n, h in enumerate(heights))
    assert heights == sorted(heights)
    least = ONEDNN_MIN_ROWS if library == "onednn" else MKL_MIN_ROWS[product]
    assert min(heights) == least
    if library == "onednn":
        # rounded: at most 1/32 more rows (a granule of the table's size above it), few distinct heights
        slack = [h - n for n, h in enumerate(heights) if n > 64]
        assert max(slack) <= (TABLE_GRANULE if product == "table" else 20000 // 32)
        assert len(set(heights)) < 300
