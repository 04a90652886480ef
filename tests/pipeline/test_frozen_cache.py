"""A frozen biLM computes a doc's layers once; later epochs reuse them."""
import spacy
from spacy.training import Example

from spacy_elmo.bilm.model import BiLM


def test_second_epoch_does_not_run_the_biLM(allennlp_dir, monkeypatch):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir)})
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2",
                                             "tok2vec": {"@architectures": "spacy-elmo.ElmoListener.v1"}}})
    texts = ["the cat sat", "a dog ran off", "birds fly south in winter"]
    optimizer = nlp.initialize(
        lambda: [Example.from_dict(nlp.make_doc(t), {"tags": ["X"] * len(t.split())}) for t in texts]
    )
    calls = {"sentences": 0}
    real = BiLM.embed_batches

    def counting(self, sentences, *args, **kwargs):
        calls["sentences"] += len(sentences)
        return real(self, sentences, *args, **kwargs)

    monkeypatch.setattr(BiLM, "embed_batches", counting)
    for epoch in range(3):
        # fresh Example objects each epoch, as spaCy's corpus reader makes them
        examples = [Example.from_dict(nlp.make_doc(t), {"tags": ["X"] * len(t.split())}) for t in texts]
        before = calls["sentences"]
        nlp.update(examples, sgd=optimizer)
        if epoch == 0:
            assert calls["sentences"] - before == 3
        else:
            assert calls["sentences"] == before, f"epoch {epoch} recomputed the biLM"
