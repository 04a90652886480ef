"""Regression: whitespace tokens reached the biLM in `embed`.

What went wrong: a `.spacy` doc of `spacy.blank("en")("Hello  world .")` has
the tokens ['Hello', ' ', 'world', '.'], and JSONL `"text"` (with --lang) or
`"tokens": ["a", "", " ", "b c"]` can hold empty or whitespace-only tokens;
`embed` fed them to the biLM, so the words' rows differed from the same text
line's and from the `elmo` component's (which skips whitespace tokens).

What happens now: such tokens are left out of the biLM's input and get rows of
zeros, so a unit keeps one row per token (lining up with `doc[start:end]`), its
other rows equal the text line's, and a unit of only whitespace is all zeros.
"""
import json

import h5py
import numpy
import spacy
from spacy.tokens import DocBin

from spacy_elmo.embedding.dump import embed_file


def _arrays(model, path, out, **kwargs):
    embed_file(model, str(path), str(out), **kwargs)
    with h5py.File(out, "r") as f:
        return {k: numpy.asarray(f[k]) for k in f if k != "sentence_to_index"}


def test_docbin_space_token_gets_zeros_and_words_match_the_text_line(allennlp_bilm, tmp_path):
    doc = spacy.blank("en")("Hello  world .")
    assert [t.text for t in doc] == ["Hello", " ", "world", "."]
    DocBin(docs=[doc]).to_disk(tmp_path / "d.spacy")
    (tmp_path / "t.txt").write_text("Hello world .\n", encoding="utf-8")
    spaced = _arrays(allennlp_bilm, tmp_path / "d.spacy", tmp_path / "d.h5")["0"]
    plain = _arrays(allennlp_bilm, tmp_path / "t.txt", tmp_path / "t.h5")["0"]
    assert spaced.shape[1] == 4
    numpy.testing.assert_array_equal(spaced[:, [0, 2, 3]], plain)
    assert not spaced[:, 1].any()


def test_jsonl_empty_and_space_tokens_and_a_unit_of_only_space(allennlp_bilm, tmp_path):
    lines = [{"tokens": ["a", "", " ", "b c"]}, {"tokens": [" ", "\t"]}, {"tokens": ["a", "b c"]}]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    arrays = _arrays(allennlp_bilm, tmp_path / "in.jsonl", tmp_path / "out.h5", layers="average")
    assert arrays["0"].shape[0] == 4 and arrays["1"].shape[0] == 2
    numpy.testing.assert_array_equal(arrays["0"][[0, 3]], arrays["2"])
    assert not arrays["0"][[1, 2]].any()
    assert not arrays["1"].any()


def test_jsonl_text_with_lang_matches_the_text_line(allennlp_bilm, tmp_path):
    (tmp_path / "in.jsonl").write_text(json.dumps({"text": "Hello  world ."}) + "\n", encoding="utf-8")
    (tmp_path / "t.txt").write_text("Hello world .\n", encoding="utf-8")
    spaced = _arrays(allennlp_bilm, tmp_path / "in.jsonl", tmp_path / "j.h5", lang="en")["0"]
    plain = _arrays(allennlp_bilm, tmp_path / "t.txt", tmp_path / "t.h5")["0"]
    numpy.testing.assert_array_equal(spaced[:, [0, 2, 3]], plain)
    assert not spaced[:, 1].any()
