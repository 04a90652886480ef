"""ElmoBiLM: frozen means predict only, fine-tuning goes through thinc's PyTorch wrapper, the doc cache."""
import numpy
import pytest
import torch
from thinc.api import PyTorchShim

from spacy_elmo.layers import ElmoBiLM
from tests.conftest import tagged_examples, tagger_pipeline


def _weights(nlp):
    return {k: v.detach().clone() for k, v in nlp.get_pipe("elmo").bilm.state_dict().items()}


def test_frozen_is_predict_only(allennlp_dir):
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir, frozen=True)
    before = _weights(nlp)
    losses = {}
    for _ in range(2):
        nlp.update(examples, sgd=optimizer, losses=losses)
    assert "elmo" not in losses and losses["tagger"] > 0
    assert not nlp.get_pipe("elmo").is_trainable  # spaCy's training table has no loss column for it
    bilm = nlp.get_pipe("elmo").bilm
    assert all(p.grad is None for p in bilm.parameters()), "a frozen biLM computed gradients"
    for name, value in _weights(nlp).items():
        assert torch.equal(value, before[name]), name


def test_fine_tuning_goes_through_thinc_pytorch_shim(allennlp_dir, monkeypatch):
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir, frozen=False)
    calls = {"begin_update": 0}
    real = PyTorchShim.begin_update

    def counting(self, inputs):
        calls["begin_update"] += 1
        return real(self, inputs)

    monkeypatch.setattr(PyTorchShim, "begin_update", counting)
    before = _weights(nlp)
    losses = {}
    # the tagger's output layer starts at zero: the first gradient into elmo is zero (no backward
    # pass); spaCy steps elmo's optimizer right after elmo's own update, so the second update's
    # gradient moves the weights in the third
    for _ in range(3):
        nlp.update(examples, sgd=optimizer, losses=losses)
    assert calls["begin_update"] == 3  # one forward (and, with a gradient, one backward) per batch
    assert losses["elmo"] > 0 and nlp.get_pipe("elmo").is_trainable
    changed = [k for k, v in _weights(nlp).items() if not torch.equal(v, before[k])]
    assert len(changed) >= len(before) - 1  # every trained tensor moved (row 0 of char_embed may not)


def test_fine_tuned_layers_equal_the_frozen_ones_before_the_update(allennlp_dir):
    """The wrapper path and the inference path compute the same layers (dropout 0 in these weights)."""
    nlp, examples, _ = tagger_pipeline(allennlp_dir, frozen=False)
    model = nlp.get_pipe("elmo").model
    docs = [eg.predicted for eg in examples]
    trained, backprop = model(docs, is_train=True)
    predicted = model.predict(docs)
    for a, b in zip(trained, predicted):
        numpy.testing.assert_allclose(a, b, atol=1e-5)
    assert backprop([numpy.ones_like(a) for a in trained]) == []


def test_frozen_training_computes_a_doc_once(allennlp_dir, biLM_calls):
    """Later epochs reuse the layers of docs already seen (fresh Example objects, as spaCy's reader makes)."""
    nlp, _, optimizer = tagger_pipeline(allennlp_dir, frozen=True)
    for epoch in range(3):
        before = biLM_calls["sentences"]
        nlp.update(tagged_examples(nlp), sgd=optimizer)
        assert biLM_calls["sentences"] - before == (3 if epoch == 0 else 0), f"epoch {epoch}"


def test_doc_cache_setting_reaches_the_model():
    model = ElmoBiLM(doc_cache_bytes=12345)
    assert model.attrs["doc_cache"].max_bytes == 12345


def test_backend_setting_reaches_every_biLM_the_model_holds(allennlp_dir, tmp_path):
    """The architecture's backend applies to the loaded biLM and survives to_disk/from_disk
    (the biLM is rebuilt there); a bad one is one clear error."""
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir), "model": {"backend": "reference"}})
    elmo = nlp.get_pipe("elmo")
    doc = nlp("A test .")
    assert elmo.bilm.backend == "reference"
    nlp.to_disk(tmp_path / "p")
    reloaded = spacy.load(tmp_path / "p")
    again = reloaded("A test .")
    assert reloaded.get_pipe("elmo").bilm.backend == "reference"
    numpy.testing.assert_array_equal(again._.elmo, doc._.elmo)
    with pytest.raises(ValueError, match="ElmoBiLM: backend 'cuda': unknown backend"):
        ElmoBiLM(backend="cuda")


def test_bad_segmentation_is_refused_when_the_pipeline_is_built():
    import spacy

    model = {"@architectures": "spacy-elmo.ElmoBiLM.v1", "segmentation": "paragraphs"}
    with pytest.raises(Exception, match="segmentation must be one of"):
        spacy.blank("en").add_pipe("elmo", config={"model": model})
