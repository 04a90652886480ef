"""The `int8` engine: close to float32, chosen only by name, its packed weights keyed on the
weights, float32 wherever it does not quantize, and one clear error where it cannot run."""
import copy
import pickle

import h5py
import numpy
import pytest
import torch
from typer.testing import CliRunner

from spacy_elmo.bilm import BiLM, BiLMConfig
from spacy_elmo.bilm.engine import BackendError, Int8Engine, backends, int8
from spacy_elmo.bilm.engine import onednn_ops as onednn

# Max |int8 - float32| over every layer. Measured on the allennlp fixture (layers up
# to 7.1 in size) over the first 300 EWT sentences: 0.05-0.07 with 8-bit inputs
# (VNNI CPUs); 7-bit inputs (REDUCE_RANGE, CPUs without VNNI) double the input step.
# 0.15 leaves room for both; a float32 backend agrees to 2e-6.
ATOL = 0.15


def needs_int8():
    reason = backends.unavailable_reason("int8")
    if reason:
        pytest.skip(f"backend int8: {reason}")


SENTENCES = [["The", "bank", "was", "closed", "."], ["A", "river", "bank", "in", "spring"], ["x"],
             ["Prices", "rose", "3.5", "%", "in", "2019", ",", "analysts", "said", "."]]


def _layers(model, sentences=SENTENCES):
    return model.embed(sentences)


def test_int8_layers_are_close_to_float32(allennlp_bilm, ewt_sentences):
    needs_int8()
    sentences = SENTENCES + ewt_sentences[:20]
    exact = _layers(allennlp_bilm, sentences)
    allennlp_bilm.backend = "int8"
    approximate = _layers(allennlp_bilm, sentences)
    differences = [float(numpy.abs(a - b).max()) for a, b in zip(exact, approximate)]
    assert max(differences) < ATOL
    assert min(differences) > 0  # the products really ran in int8
    for a, b in zip(exact, approximate):  # every layer, not only the largest
        assert a.shape == b.shape
        for layer in range(a.shape[0]):
            cosine = float((a[layer] * b[layer]).sum() / numpy.linalg.norm(a[layer]) / numpy.linalg.norm(b[layer]))
            assert cosine > 0.999
    allennlp_bilm.backend = "auto"  # back to float32: the same bits as before int8 ran
    assert all(numpy.array_equal(a, b) for a, b in zip(exact, _layers(allennlp_bilm, sentences)))


def test_auto_never_resolves_to_int8(monkeypatch):
    assert "int8" in backends.NAMES and "int8" in backends.APPROXIMATE and "int8" not in backends.BACKENDS
    assert backends.resolve("auto") != "int8" and "int8" not in backends.available()
    from spacy_elmo.cli.info import cpu_inference

    cpu = cpu_inference()  # `spacy-elmo info` lists int8 with the others, auto never resolves to it
    assert list(cpu["backends"]) == list(backends.NAMES) and cpu["backend"] == backends.resolve("auto")
    assert cpu["backends"]["int8"] == backends.unavailable_reason("int8")
    # with every faster float32 backend unavailable, auto still picks an exact one
    monkeypatch.setattr(onednn, "_WORKS", False)
    assert backends.resolve("auto") == "mkl"
    assert BiLM(BiLMConfig(lstm_dim=8, projection_dim=4, n_layers=1, filters=((1, 4),), n_highway=0)).engine.name \
        == "mkl"


def test_backend_int8_through_the_bilm_and_embed(allennlp_dir, tmp_path):
    needs_int8()
    from spacy_elmo.cli import app

    config = BiLMConfig(lstm_dim=8, projection_dim=4, n_layers=1, filters=((1, 4),), n_highway=1)
    bilm = BiLM(config, backend="int8")
    assert isinstance(bilm.engine, Int8Engine) and bilm.backend == "int8"
    assert bilm.lstm.engine is bilm.engine and bilm.token_encoder.engine is bilm.engine
    text = tmp_path / "in.txt"
    text.write_text("hello world\nsecond line .\n")
    dumps = {}
    for backend in ("auto", "int8"):
        out = tmp_path / f"{backend}.hdf5"
        result = CliRunner().invoke(app, ["embed", str(text), str(out), "--weights", str(allennlp_dir), "--quiet",
                                          "--backend", backend])
        assert result.exit_code == 0, result.output
        with h5py.File(out, "r") as f:
            dumps[backend] = [f[key][()] for key in ("0", "1")]
    for exact, approximate in zip(dumps["auto"], dumps["int8"]):
        assert exact.shape == approximate.shape and 0 < numpy.abs(exact - approximate).max() < ATOL


def test_kept_weights_follow_weight_changes(allennlp_bilm):
    needs_int8()
    allennlp_bilm.backend = "int8"
    engine = allennlp_bilm.engine
    allennlp_bilm.disable_cache()  # the token vectors are recomputed: the encoder's products run every call
    first = _layers(allennlp_bilm)
    kept = {key: value[1] for key, value in engine._kept.items()}
    assert kept and engine._encoder_kept is not None and len(engine._encoder_kept) > 0
    assert all(numpy.array_equal(a, b) for a, b in zip(first, _layers(allennlp_bilm)))
    assert all(engine._kept[key][1] is value for key, value in kept.items())  # reused, not re-packed
    with torch.no_grad():
        allennlp_bilm.lstm.weight_hh[1].mul_(0.5)
        allennlp_bilm.token_encoder.highways[0].mul_(0.5)
    changed = _layers(allennlp_bilm)
    fresh = copy.deepcopy(allennlp_bilm)  # a new engine: nothing kept
    assert not fresh.engine._kept and fresh.engine._encoder_kept is None
    assert all(numpy.array_equal(a, b) for a, b in zip(changed, _layers(fresh)))
    assert not numpy.array_equal(changed[0][2], first[0][2])  # the top layer moved with W_hh
    assert not numpy.array_equal(changed[0][0], first[0][0])  # the token vectors moved with the highway
    pickle.loads(pickle.dumps(engine))  # packed weights are dropped, not pickled


def test_training_and_unquantized_tensors_run_float32(allennlp_bilm):
    """train() runs mkl's float32 recurrence; float64 inference runs mkl's loop: the same bits as mkl."""
    needs_int8()
    sentences = SENTENCES[:3]
    allennlp_bilm.train()
    allennlp_bilm.backend = "mkl"
    torch.manual_seed(0)
    trained_mkl = allennlp_bilm(sentences).layers
    allennlp_bilm.backend = "int8"
    torch.manual_seed(0)
    assert torch.equal(allennlp_bilm(sentences).layers, trained_mkl)
    allennlp_bilm.eval()
    allennlp_bilm.double()
    allennlp_bilm.backend = "mkl"
    exact = _layers(allennlp_bilm, sentences)
    allennlp_bilm.backend = "int8"
    assert all(numpy.array_equal(a, b) for a, b in zip(exact, _layers(allennlp_bilm, sentences)))


def test_unavailable_int8_is_one_clear_error(monkeypatch):
    def broken(*args):
        raise RuntimeError("Didn't find engine for operation quantized::linear_prepack NoQEngine")

    monkeypatch.setattr(int8, "_WORKS", None)
    monkeypatch.setattr(int8, "pack", broken)
    assert backends.unavailable_reason("int8").startswith("this PyTorch build has no working quantized CPU engine")
    with pytest.raises(BackendError, match="backend 'int8': this PyTorch build has no working quantized"):
        backends.check("int8")
    with pytest.raises(BackendError, match="backend 'int8'"):
        BiLM(BiLMConfig(lstm_dim=8, projection_dim=4, n_layers=1, filters=((1, 4),), n_highway=0), backend="int8")
    assert backends.resolve("auto") in backends.BACKENDS  # auto is unaffected
