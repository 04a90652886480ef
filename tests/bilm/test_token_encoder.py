"""The token layer: the char CNN with a word table (x = projection([highway(char CNN); v(w)])), and word inputs."""
import numpy
import torch

from spacy_elmo.bilm import BiLM, BiLMConfig
from tests.bilm.word_tables import SENTENCES, WORDS, layers, table_bilm, table_config


def test_shapes_and_the_table_enters_the_token_layer():
    bilm = table_bilm()
    out = layers(bilm)
    assert [x.shape for x in out] == [(3, 5, 16), (3, 2, 16), (3, 1, 16)]
    # a different table row for "bank" changes its token layer and nothing of "river"'s
    before = out[0]
    with torch.no_grad():
        bilm.token_encoder.word_table[WORDS.index("bank")] += 1.0
    after = layers(bilm)[0]
    assert not numpy.allclose(before[0, 1], after[0, 1])
    numpy.testing.assert_array_equal(before[0, 4], after[0, 4])


def test_table_is_frozen_by_default_and_the_learned_rows_train():
    bilm = table_bilm().train()
    encoder = bilm.token_encoder
    assert not encoder.word_table.requires_grad
    out = bilm(SENTENCES)
    out.layers.sum().backward()
    assert encoder.word_table.grad is None
    assert encoder.word_specials.grad is not None and encoder.word_specials.grad.abs().sum() > 0
    assert encoder.proj_weight.grad.abs().sum() > 0
    trainable = table_bilm(word_table_trainable=True).train()
    trainable(SENTENCES).layers.sum().backward()
    assert trainable.token_encoder.word_table.grad.abs().sum() > 0


def test_config_without_a_table_has_the_published_tensors():
    plain = BiLM(table_config(word_table_rows=0, word_table_dim=0, word_table_specials=0))
    names = set(plain.state_dict())
    assert not any("word_" in name for name in names)
    assert plain.token_encoder.proj_weight.shape == (10, 8)
    assert table_bilm().token_encoder.proj_weight.shape == (16, 8)


def test_word_input_encoder():
    from spacy_elmo.bilm import Vocabulary

    vocab = Vocabulary(["<S>", "</S>", "<UNK>", "the", "cat"])
    config = BiLMConfig(lstm_dim=8, projection_dim=4, n_layers=1, use_character_inputs=False, n_tokens_vocab=5)
    model = BiLM(config, vocab=vocab)
    model.reset_parameters(0)
    out = model.embed([["the", "cat", "unknown"]])[0]
    assert out.shape == (2, 3, 8)
    # unknown words share the <UNK> row at layer 0
    out2 = model.embed([["the", "cat", "other"]])[0]
    numpy.testing.assert_array_equal(out[0, 2], out2[0, 2])
