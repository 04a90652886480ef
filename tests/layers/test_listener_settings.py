"""The listener's own settings: dropout of the mixed vector and the gradient factor into the biLM.

Semantics pinned here: the dropout rate is fixed per listener (spaCy's
`[training] dropout` / `set_dropout_rate` does not change it), applies in
training only and is exactly off at prediction; `grad_factor` multiplies the
gradient the listener sends to the `elmo` component and nothing else.
"""
import numpy
import pytest
import spacy
from spacy.tokens import Doc
from thinc.api import Config, fix_random_seed, set_dropout_rate

from spacy_elmo.layers import ElmoListener, ElmoListenerLayer
from spacy_elmo.layers.listener import DROPOUT_ATTR
from tests.conftest import tagged_examples, tagger_pipeline

RATE = 0.5


def _docs(n_layers=3, width=8):
    nlp = spacy.blank("en")
    rng = numpy.random.RandomState(0)
    docs = []
    for words in (["a", "b", "c"], ["d", "e", "f", "g", "h"]):
        doc = Doc(nlp.vocab, words=words)
        doc._.elmo = rng.uniform(0.5, 1.5, (n_layers, len(words), width)).astype("float32")
        docs.append(doc)
    return docs


def _initialized(docs, **settings):
    model = ElmoListener(**settings)
    n_layers, _, width = docs[0]._.elmo.shape
    model.get_ref("listener").set_dim("nL", n_layers)  # what linking to an elmo component sets
    model.get_ref("listener").set_dim("nO", width)
    model.initialize(X=docs)
    return model


def _node(model, name):
    return next(node for node in model.walk() if node.name == name)


def test_dropout_zeroes_and_scales_in_training_and_is_off_at_prediction():
    docs = _docs()
    model = _initialized(docs, dropout=RATE)
    plain = _initialized(docs, dropout=0.0)
    expected = plain.predict(docs)  # the mix without dropout (all values > 0)
    for got, want in zip(model.predict(docs), expected):
        assert got.dtype == want.dtype
        numpy.testing.assert_array_equal(got, want)  # bit for bit
    fix_random_seed(0)
    trained, backprop = model.begin_update(docs)
    zeros = numpy.concatenate([(Y == 0).ravel() for Y in trained])
    assert 0.35 < zeros.mean() < 0.65
    for Y, want in zip(trained, expected):
        kept = Y != 0
        numpy.testing.assert_array_equal(Y[kept], want[kept] / (1 - RATE))
    # the same seed gives the same mask
    fix_random_seed(0)
    for a, b in zip(trained, model.begin_update(docs)[0]):
        numpy.testing.assert_array_equal(a, b)


def test_dropout_backprop_uses_the_forward_mask():
    docs = _docs()
    dropout = _node(_initialized(docs, dropout=RATE), "elmo-dropout")
    Xs = [numpy.ones((4, 8), dtype="float32"), numpy.ones((2, 8), dtype="float32")]
    fix_random_seed(1)
    Ys, backprop = dropout(Xs, is_train=True)
    for Y, dX in zip(Ys, backprop([numpy.ones_like(X) for X in Xs])):
        numpy.testing.assert_array_equal(dX, Y)  # mask * 1 on both passes
    Ys, backprop = dropout(Xs, is_train=False)
    assert Ys is Xs and backprop(Xs) is Xs


@pytest.mark.parametrize("spacy_rate", [0.0, 0.9])
def test_the_rate_is_fixed_and_survives_set_dropout_rate(spacy_rate):
    docs = _docs()
    model = _initialized(docs, dropout=RATE)
    set_dropout_rate(model, spacy_rate)
    assert _node(model, "elmo-dropout").attrs[DROPOUT_ATTR] == RATE
    fix_random_seed(0)
    zeros = numpy.concatenate([(Y == 0).ravel() for Y in model.begin_update(docs)[0]])
    assert 0.35 < zeros.mean() < 0.65


def test_spacy_update_with_drop_zero_keeps_the_listener_dropout(allennlp_dir):
    """nlp.update(drop=0.0) sets thinc's dropout layers (the Maxout's) to 0, not the listener's rate."""
    tok2vec = {
        "@architectures": "spacy-elmo.ElmoTok2Vec.v1",
        "width": 16,
        "dropout": 0.3,
        "elmo": {"@architectures": "spacy-elmo.ElmoListener.v1", "dropout": RATE},
    }
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir, tok2vec=tok2vec)
    model = nlp.get_pipe("tagger").model
    node = _node(model, "elmo-dropout")
    seen = []
    forward = node._func

    def spy(model, Xs, is_train):
        Ys, backprop = forward(model, Xs, is_train)
        seen.append((is_train, Xs, Ys))
        return Ys, backprop

    node._func = spy
    fix_random_seed(0)
    nlp.update(examples, sgd=optimizer, drop=0.0)
    assert [n.attrs["dropout_rate"] for n in model.walk() if "dropout_rate" in n.attrs] == [0.0]
    assert node.attrs[DROPOUT_ATTR] == RATE
    (is_train, Xs, Ys), = seen
    assert is_train
    X, Y = numpy.concatenate(Xs), numpy.concatenate(Ys)
    dropped = (Y == 0) & (X != 0)
    assert 0.35 < dropped.mean() < 0.65
    numpy.testing.assert_array_equal(Y[~dropped], X[~dropped] / (1 - RATE))
    seen.clear()
    nlp("the cat sat")
    (is_train, Xs, Ys), = seen
    assert not is_train and Ys is Xs


def test_settings_are_validated():
    with pytest.raises(ValueError, match="ElmoListener: dropout must be in \\[0, 1\\), got 1.0"):
        ElmoListener(dropout=1.0)
    with pytest.raises(ValueError, match="ElmoListener: dropout must be in \\[0, 1\\), got -0.1"):
        ElmoListener(dropout=-0.1)
    with pytest.raises(ValueError, match="ElmoListener: grad_factor must be a finite number"):
        ElmoListener(grad_factor=float("nan"))


def test_grad_factor_scales_the_gradient_reaching_the_upstream(allennlp_dir, monkeypatch):
    """A fine-tuned elmo receives grad_factor times the listener's gradient; the tagger's own loss is unchanged."""
    fix_random_seed(0)
    tok2vec = {"@architectures": "spacy-elmo.ElmoListener.v1", "dropout": 0.0}
    nlp, examples, optimizer = tagger_pipeline(allennlp_dir, tok2vec=tok2vec, frozen=False)
    for _ in range(2):  # the tagger's output layer starts at zero, so its first gradient to tok2vec is zero
        nlp.update(examples, sgd=optimizer)
    received = []
    receive = ElmoListenerLayer.receive

    def recording_receive(self, batch_id, outputs, backprop):
        def recording(d_layers):
            received.append([numpy.array(d) for d in d_layers])
            return backprop(d_layers)

        receive(self, batch_id, outputs, recording)

    monkeypatch.setattr(ElmoListenerLayer, "receive", recording_receive)
    factor_node = _node(nlp.get_pipe("tagger").model, "elmo-grad-factor")
    losses = {}
    for factor in (1.0, 0.5, 0.0):
        factor_node.attrs["grad_factor"] = factor
        losses[factor] = {}
        fix_random_seed(0)
        nlp.update(examples, sgd=False, losses=losses[factor])  # no weight changes between the three
    full, half, none = received
    assert any(d.any() for d in full)
    for f, h, z in zip(full, half, none):
        assert h.dtype == numpy.float32 and z.dtype == numpy.float32
        numpy.testing.assert_array_equal(h, 0.5 * f)
        assert not z.any()
    assert losses[1.0]["tagger"] == losses[0.5]["tagger"] == losses[0.0]["tagger"]
    assert losses[0.5]["elmo"] == pytest.approx(0.25 * losses[1.0]["elmo"], rel=1e-5)
    assert losses[0.0]["elmo"] == 0.0


PIPELINE = """
[nlp]
lang = "en"
pipeline = ["elmo", "tagger", "ner"]

[components]

[components.elmo]
factory = "elmo"
weights = "{weights}"

[components.tagger]
factory = "tagger"

[components.tagger.model]
@architectures = "spacy.Tagger.v2"

[components.tagger.model.tok2vec]
@architectures = "spacy-elmo.ElmoListener.v1"
dropout = 0.25
grad_factor = 0.5

[components.ner]
factory = "ner"

[components.ner.model]
@architectures = "spacy.TransitionBasedParser.v2"
state_type = "ner"
hidden_width = 16
maxout_pieces = 2

[components.ner.model.tok2vec]
@architectures = "spacy-elmo.ElmoTok2Vec.v1"
width = 16

[components.ner.model.tok2vec.elmo]
@architectures = "spacy-elmo.ElmoListener.v1"
"""


def _settings(nlp, name):
    model = nlp.get_pipe(name).model
    return _node(model, "elmo-dropout").attrs[DROPOUT_ATTR], _node(model, "elmo-grad-factor").attrs["grad_factor"]


def test_config_round_trip_with_the_new_keys(allennlp_dir, tmp_path):
    config = Config().from_str(PIPELINE.format(weights=allennlp_dir))
    nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=True)
    assert _settings(nlp, "tagger") == (0.25, 0.5)
    assert _settings(nlp, "ner") == (0.5, 1.0)  # the defaults, filled into the config
    filled = nlp.config["components"]["ner"]["model"]["tok2vec"]["elmo"]
    assert filled["dropout"] == 0.5 and filled["grad_factor"] == 1.0
    again = Config().from_str(nlp.config.to_str())
    assert again["components"]["tagger"]["model"]["tok2vec"]["dropout"] == 0.25
    assert again["components"]["tagger"]["model"]["tok2vec"]["grad_factor"] == 0.5
    rebuilt = spacy.util.load_model_from_config(again, auto_fill=True, validate=True)
    assert _settings(rebuilt, "tagger") == (0.25, 0.5) and _settings(rebuilt, "ner") == (0.5, 1.0)
    nlp.get_pipe("ner").add_label("ORG")
    nlp.initialize(lambda: tagged_examples(nlp))
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert _settings(loaded, "tagger") == (0.25, 0.5) and _settings(loaded, "ner") == (0.5, 1.0)
    # the config decides, as for the elmo component: an override at load is what the model uses
    edited = spacy.load(tmp_path / "pipeline", config={"components.tagger.model.tok2vec.dropout": 0.1,
                                                       "components.tagger.model.tok2vec.grad_factor": 0.0})
    assert edited.config["components"]["tagger"]["model"]["tok2vec"]["dropout"] == 0.1
    assert _settings(edited, "tagger") == (0.1, 0.0)
    edited.to_disk(tmp_path / "edited")
    assert _settings(spacy.load(tmp_path / "edited"), "tagger") == (0.1, 0.0)
    doc = nlp("the cat sat")
    other = loaded("the cat sat")
    numpy.testing.assert_array_equal(nlp.get_pipe("tagger").model.predict([doc])[0],
                                     loaded.get_pipe("tagger").model.predict([other])[0])


def test_replace_listeners_keeps_the_settings(allennlp_dir, tmp_path):
    tok2vec = {"@architectures": "spacy-elmo.ElmoListener.v1", "dropout": 0.25, "grad_factor": 0.0}
    nlp, _, _ = tagger_pipeline(allennlp_dir, tok2vec=tok2vec)
    nlp.replace_listeners("elmo", "tagger", ["model.tok2vec"])
    block = nlp.config["components"]["tagger"]["model"]["tok2vec"]
    assert block["@architectures"] == "spacy-elmo.ElmoStandalone.v1"
    assert block["dropout"] == 0.25 and block["grad_factor"] == 0.0
    nlp.to_disk(tmp_path / "pipeline")
    assert _settings(spacy.load(tmp_path / "pipeline"), "tagger") == (0.25, 0.0)
