"""A language-model batch: forward reads <S> w1..wn and predicts w1..wn </S>; backward the reverse."""
from spacy_elmo.bilm.language_model import sentence_batch
from spacy_elmo.bilm.vocab import SPECIAL_TOKENS, Vocabulary


def test_sentence_batch_reads_and_predicts_each_direction():
    vocab = Vocabulary([*SPECIAL_TOKENS, "the", "cat"])
    batch = sentence_batch([["the", "cat"], ["dog"]], vocab)
    assert batch.tokens == ["the", "cat", "dog"] and batch.lengths == [3, 2]
    # token-table rows: 0 = <S>, 1 = </S>, 2 + i = tokens[i]
    assert batch.index[0].tolist() == [[0, 2, 3], [0, 4, 0]]
    assert batch.index[1].tolist() == [[1, 3, 2], [1, 4, 0]]
    # vocabulary ids, -1 where nothing is predicted; "dog" is unknown
    assert batch.targets[0].tolist() == [[3, 4, vocab.eos], [vocab.unk, vocab.eos, -1]]
    assert batch.targets[1].tolist() == [[4, 3, vocab.bos], [vocab.unk, vocab.bos, -1]]
    assert int((batch.targets[0] >= 0).sum()) == 5
