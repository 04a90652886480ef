import numpy

from spacy_elmo.bilm.char_ids import PAD_ID, CharDictionary, CharIdEncoder, batch_to_ids, token_to_char_ids


def test_layout_matches_published_scheme():
    ids = token_to_char_ids("ab")
    # [bow, a, b, eow, pad...] each +1
    assert ids[:5].tolist() == [259, ord("a") + 1, ord("b") + 1, 260, 261]
    assert (ids[4:] == PAD_ID).all() and ids.shape == (50,)


def test_utf8_bytes_and_byte_level_truncation():
    ids = token_to_char_ids("é" * 30)  # 60 bytes: truncated to 48 bytes
    assert ids[0] == 259 and ids[49] == 260
    assert ids[1:49].tolist() == [b + 1 for b in ("é" * 24).encode("utf-8")]


def test_empty_token_and_lone_surrogate_get_ids():
    assert token_to_char_ids("")[:3].tolist() == [259, 260, 261]
    ids = token_to_char_ids("\ud800")
    assert ids[0] == 259 and ids[4] == 260


def test_boundaries_and_literal_strings():
    plain = CharIdEncoder().encode(["<S>"])
    assert plain[0][:3].tolist() == [259, 257, 260]  # BOS row
    assert plain[1][:3].tolist() == [259, 258, 260]  # EOS row
    assert plain[2][1] == ord("<") + 1  # a literal "<S>" is just characters
    parity = CharIdEncoder(boundary_strings=True).encode(["<S>", "</S>"])
    numpy.testing.assert_array_equal(parity[2], parity[0])
    numpy.testing.assert_array_equal(parity[3], parity[1])


def test_batch_to_ids_and_lengths():
    ids = batch_to_ids([["a", "bcd"], []])
    assert ids.shape == (2, 4, 50)
    assert ids[1][0, 1] == 257 and ids[1][1, 1] == 258  # an empty sentence is <S> </S>
    assert (ids[1][2:] == 0).all()
    assert ((ids[0] != PAD_ID) & (ids[0] != 0)).sum(axis=-1).tolist() == [3, 3, 5, 3]


def test_a_character_dictionary_reads_characters_not_bytes():
    specials = ["<bow>", "<eow>", "<bos>", "<eos>", "<oov>", "<pad>"]
    dictionary = CharDictionary(specials + ["é", "a"])
    index = dictionary.index
    encoder = CharIdEncoder(6, boundary_strings=True, dictionary=dictionary)
    rows = encoder.encode(["éaz", "<bos>", "ééééé"])
    assert rows[0].tolist() == [index["<bow>"], index["<bos>"], index["<eow>"]] + [index["<pad>"]] * 3
    # one slot per character (not per byte), an unknown character is <oov>
    assert rows[2].tolist() == [index["<bow>"], index["é"], index["a"], index["<oov>"], index["<eow>"], index["<pad>"]]
    numpy.testing.assert_array_equal(rows[3], rows[0])  # boundary strings are the dictionary's names
    assert rows[4].tolist() == [index["<bow>"]] + [index["é"]] * 4 + [index["<eow>"]]  # cut to max_chars - 2
    swapped = CharIdEncoder(6, dictionary=CharDictionary(specials + ["a"], swap_word_ends=True)).ids("a")
    assert swapped[0] == index["<eow>"] and swapped[2] == index["<bow>"]
    assert CharDictionary.from_dict(dictionary.to_dict()) == dictionary
