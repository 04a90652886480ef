"""Training through listeners: tagger, parser and ner each learn with their own mix."""
import json
import random
import subprocess
import sys
from pathlib import Path

import numpy
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example
from thinc.api import Adam, Config, fix_random_seed

from spacy_elmo.gold_data import ud_docs, uner_docs, write_docbin
from spacy_elmo.layers import mix_weights

CONFIGS = Path(__file__).resolve().parents[2] / "configs"

PIPELINE = """
[nlp]
lang = "en"
pipeline = ["elmo", "tagger", "parser", "ner"]

[components]

[components.elmo]
factory = "elmo"
weights = "{weights}"
frozen = {frozen}

[components.tagger]
factory = "tagger"

[components.tagger.model]
@architectures = "spacy.Tagger.v2"

[components.tagger.model.tok2vec]
@architectures = "spacy-elmo.ElmoListener.v1"

[components.parser]
factory = "parser"

[components.parser.model]
@architectures = "spacy.TransitionBasedParser.v2"
state_type = "parser"
hidden_width = 64
maxout_pieces = 2

[components.parser.model.tok2vec]
@architectures = "spacy-elmo.ElmoTok2Vec.v1"
width = 64

[components.parser.model.tok2vec.elmo]
@architectures = "spacy-elmo.ElmoListener.v1"

[components.parser.model.tok2vec.embed]
@architectures = "spacy.MultiHashEmbed.v2"
width = 64
attrs = ["NORM", "PREFIX", "SUFFIX", "SHAPE"]
rows = [2000, 500, 500, 500]
include_static_vectors = false

[components.ner]
factory = "ner"

[components.ner.model]
@architectures = "spacy.TransitionBasedParser.v2"
state_type = "ner"
hidden_width = 64
maxout_pieces = 2

[components.ner.model.tok2vec]
@architectures = "spacy-elmo.ElmoTok2Vec.v1"
width = 64

[components.ner.model.tok2vec.elmo]
@architectures = "spacy-elmo.ElmoListener.v1"
width = 32

[components.ner.model.tok2vec.embed]
@architectures = "spacy.MultiHashEmbed.v2"
width = 64
attrs = ["NORM", "PREFIX", "SUFFIX", "SHAPE"]
rows = [2000, 500, 500, 500]
include_static_vectors = false
"""


def _examples(nlp, ewt_dir, data_dir, n_sents=4, limit=160):
    """EWT dev sentences with gold tags, heads and (UNER) entities, aligned sentence by sentence."""
    ud = ud_docs(ewt_dir / "en_ewt-ud-dev.conllu.gz", n_sents=1, limit=limit)
    ner_docs = uner_docs(data_dir / "uner_en_ewt" / "en_ewt-ud-dev.iob2.gz", n_sents=1)
    ner = {tuple(t.text for t in d): d for d in ner_docs}
    pairs = [(d, ner[tuple(t.text for t in d)]) for d in ud if tuple(t.text for t in d) in ner]
    examples = []
    for start in range(0, len(pairs), n_sents):
        group = pairs[start : start + n_sents]
        words, tags, heads, deps, ents, starts = [], [], [], [], [], []
        for doc, ner_doc in group:
            offset = len(words)
            words += [t.text for t in doc]
            tags += [t.tag_ for t in doc]
            heads += [t.head.i + offset for t in doc]
            deps += [t.dep_ for t in doc]
            ents += [t.ent_iob_ + ("-" + t.ent_type_ if t.ent_type_ else "") for t in ner_doc]
            starts += [i == 0 for i in range(len(doc))]
        reference = Doc(nlp.vocab, words=words, tags=tags, heads=heads, deps=deps, ents=ents, sent_starts=starts)
        examples.append(Example(Doc(nlp.vocab, words=words), reference))
    return examples


def _train(allennlp_dir, ewt_dir, data_dir, frozen=True, epochs=10):
    fix_random_seed(0)
    config = Config().from_str(PIPELINE.format(weights=allennlp_dir, frozen=str(frozen).lower()))
    nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=True)
    examples = _examples(nlp, ewt_dir, data_dir)
    assert len(examples) >= 20
    nlp.initialize(lambda: examples)
    optimizer = Adam(0.01)  # a short run: a larger step than spaCy's default
    history = []
    rng = random.Random(0)
    for _ in range(epochs):
        rng.shuffle(examples)
        losses = {}
        for start in range(0, len(examples), 8):
            nlp.update(examples[start : start + 8], sgd=optimizer, losses=losses)
        history.append(losses)
    return nlp, examples, history


@pytest.fixture(scope="module")
def trained(allennlp_dir, ewt_dir, data_dir):
    return _train(allennlp_dir, ewt_dir, data_dir)


def test_all_three_learn(trained):
    nlp, examples, history = trained
    for name in ("tagger", "parser", "ner"):
        assert history[-1][name] < 0.9 * history[0][name], (name, [h[name] for h in history])
    print({name: [round(float(h[name]), 1) for h in history] for name in history[0]})
    scores = nlp.evaluate(examples)
    tags = [t.tag_ for eg in examples for t in eg.reference]
    majority = max(tags.count(t) for t in set(tags)) / len(tags)
    assert scores["tag_acc"] > majority + 0.1
    assert scores["dep_uas"] > 0.3  # attaching at random scores about 1/length
    assert scores["ents_p"] > 0.0


def test_each_task_has_its_own_mix(trained):
    nlp = trained[0]
    mixes = {}
    for name in ("tagger", "parser", "ner"):
        for node in nlp.get_pipe(name).model.walk():
            if node.name == "scalar-mix":
                mixes[name] = mix_weights(node)
    assert set(mixes) == {"tagger", "parser", "ner"}
    weights = {k: numpy.asarray(w) for k, (w, g) in mixes.items()}
    for w in weights.values():
        assert w.shape == (3,) and abs(w.sum() - 1) < 1e-5
    assert not numpy.allclose(weights["tagger"], weights["parser"], atol=1e-4)
    assert not numpy.allclose(weights["tagger"], weights["ner"], atol=1e-4)
    assert len({round(g, 6) for _, g in mixes.values()}) == 3


def test_spacy_train_cli_end_to_end(allennlp_dir, ewt_dir, tmp_path):
    """`spacy train` with the shipped config on a small real EWT sample."""
    docs = ud_docs(ewt_dir / "en_ewt-ud-train.conllu.gz", n_sents=5, limit=100)
    write_docbin(docs[:16], tmp_path / "train.spacy")
    write_docbin(docs[16:], tmp_path / "dev.spacy")
    out = subprocess.run(
        [sys.executable, "-m", "spacy", "train", str(CONFIGS / "ewt_elmo.cfg"), "--output", str(tmp_path / "model"),
         "--paths.train", str(tmp_path / "train.spacy"), "--paths.dev", str(tmp_path / "dev.spacy"),
         "--initialize.components.elmo.loader",
         json.dumps({"@model_loaders": "spacy-elmo.PublishedLoader.v1", "path": str(allennlp_dir)}),
         "--training.max_steps", "12", "--training.eval_frequency", "6"],
        capture_output=True, text=True, timeout=900,
    )
    assert out.returncode == 0, out.stderr[-3000:] + out.stdout[-3000:]
    nlp = spacy.load(tmp_path / "model" / "model-last")
    doc = nlp("This is a sentence .")
    assert doc._.elmo.shape == (3, 5, 32) and all(t.dep_ for t in doc)
