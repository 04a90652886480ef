"""A Chinese pipeline end to end on an ELMoForManyLangs-layout model: elmo, then a tagger
trained through the listener, saved and loaded."""
import numpy
import spacy
from spacy.tokens import Doc
from spacy.training import Example
from thinc.api import Adam, fix_random_seed

from ..io.manylangs_model import write_manylangs_model

TRAIN = [
    (["我们", "在", "银行", "旁边", "的", "河岸", "上"], ["PRON", "ADP", "NOUN", "NOUN", "PART", "NOUN", "ADP"]),
    (["他", "去", "了", "银行"], ["PRON", "VERB", "PART", "NOUN"]),
    (["钱", "很", "多"], ["NOUN", "ADV", "ADJ"]),
]


def test_chinese_pipeline_trains_a_tagger_through_the_listener(tmp_path):
    weights = write_manylangs_model(tmp_path / "zh_model")
    nlp = spacy.blank("zh")
    nlp.add_pipe("elmo", config={"weights": str(weights)})
    listener = {"@architectures": "spacy-elmo.ElmoListener.v1", "dropout": 0.0}
    tagger = {"@architectures": "spacy.Tagger.v2", "tok2vec": listener}
    nlp.add_pipe("tagger", config={"model": tagger})
    examples = [Example.from_dict(Doc(nlp.vocab, words=words), {"tags": tags}) for words, tags in TRAIN]
    fix_random_seed(0)
    nlp.initialize(lambda: examples)
    optimizer = Adam(0.01)  # a short run: a larger step than spaCy's default
    losses = []
    for _ in range(150):
        step = nlp.update(examples, sgd=optimizer, losses={})
        losses.append(step["tagger"])
    assert losses[-1] < 0.2 * losses[0]
    predicted = [[t.tag_ for t in nlp(Doc(nlp.vocab, words=words))] for words, _ in TRAIN]
    assert predicted == [tags for _, tags in TRAIN]

    doc = nlp("我们在银行旁边")  # the default Chinese tokenizer: one token per character
    assert doc._.elmo.shape == (3, len(doc), 16)
    nlp.to_disk(tmp_path / "pipeline")
    reloaded = spacy.load(tmp_path / "pipeline")
    again = reloaded("我们在银行旁边")
    numpy.testing.assert_array_equal(doc._.elmo, again._.elmo)
    assert [t.tag_ for t in again] == [t.tag_ for t in doc]
