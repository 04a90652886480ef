"""`engine/char_convolution.py`: the pooled convolutions equal the reference's (every window of every width),
for tokens of every length, byte and dictionary ids, and however the rows are chunked."""
import pytest
import torch

from spacy_elmo.bilm import BiLMConfig, CharDictionary, CharIdEncoder
from spacy_elmo.bilm.engine import char_convolution
from spacy_elmo.bilm.token_encoder import CharCNNEncoder

TOKENS = ["", "a", "ab", "abc", "abcdefg", "x" * 9, "a much longer token than max_chars", "é", "a"]


def reference_pooling(encoder: CharCNNEncoder, char_ids: torch.Tensor) -> torch.Tensor:
    """The definition: each width's valid convolution over all max_chars positions, max-pooled."""
    emb = encoder.char_embed[char_ids]  # (n, max_chars, dim)
    pooled = []
    for w, weight, bias in zip(encoder.widths, encoder.conv_weights, encoder.conv_biases):
        windows = emb.unfold(1, w, 1).transpose(2, 3).reshape(emb.shape[0], -1, w * emb.shape[2])
        pooled.append((windows @ weight.reshape(w * emb.shape[2], -1) + bias).amax(dim=1))
    return torch.cat(pooled, dim=1)


def encoder_for(characters: str = "bytes", n_characters: int = 262) -> CharCNNEncoder:
    config = BiLMConfig(lstm_dim=8, projection_dim=4, filters=((1, 3), (2, 4), (4, 2), (7, 5)), n_highway=1,
                        char_embedding_dim=3, max_characters_per_token=9, characters=characters,
                        n_characters=n_characters)
    encoder = CharCNNEncoder(config).double()
    encoder.reset_parameters(torch.Generator().manual_seed(0))
    with torch.no_grad():
        encoder.char_embed.normal_(generator=torch.Generator().manual_seed(1))  # the padding row matters
    return encoder


@pytest.mark.parametrize("max_elements", [char_convolution.MAX_CONV_ELEMENTS, 40])
def test_byte_ids_of_every_length_match_the_reference(monkeypatch, max_elements):
    monkeypatch.setattr(char_convolution, "MAX_CONV_ELEMENTS", max_elements)  # 40: one token per chunk
    encoder = encoder_for()
    ids = torch.from_numpy(CharIdEncoder(9).encode(TOKENS))
    got = char_convolution.max_pooled_convolutions(encoder, ids)
    torch.testing.assert_close(got, reference_pooling(encoder, ids), rtol=1e-12, atol=1e-12)


def test_a_dictionary_with_its_own_padding_id_matches_the_reference():
    dictionary = CharDictionary(["<pad>", "a", "<bow>", "<eow>", "<bos>", "<eos>", "<oov>", "b"])
    encoder = encoder_for("dictionary", len(dictionary))
    char_encoder = CharIdEncoder(9, dictionary=dictionary)
    encoder.pad_id = char_encoder.pad_id
    ids = torch.from_numpy(char_encoder.encode(["ab", "", "bbbbbbbbbbbb", "zz"]))
    got = char_convolution.max_pooled_convolutions(encoder, ids)
    torch.testing.assert_close(got, reference_pooling(encoder, ids), rtol=1e-12, atol=1e-12)
