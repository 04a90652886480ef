"""Regression: pretraining text read differently from every other path.

A `.spacy` token holding a space (a Vietnamese word from UD, "Công ty") was cached as "Công\\u00a0ty",
so the run's vocabulary and softmax knew a string that `perplexity`, the component and `embed`
(which read "Công ty") never give: `perplexity` on the run's own dev file scored 9.02 where the run
logged 2.62. And a UTF-8 byte-order mark (an editor's "UTF-8 with BOM") joined the first token of a
text file ("\\ufeffDer" beside "Der"), where `embed` and `corpus` drop it.
"""
import gzip

import spacy
from spacy.tokens import Doc, DocBin

from spacy_elmo.pretrain.text_corpus import TokenizedCorpus, text_segments

WORDS = [["Công ty", "này", "có", "nhiều", "nhân viên", "."], ["Tôi", "yêu", "Hà Nội", "."]]


def test_a_token_holding_a_space_is_pretrained_as_itself(tmp_path):
    vocab = spacy.blank("xx").vocab
    path = tmp_path / "vi.spacy"
    DocBin(docs=[Doc(vocab, words=words) for words in WORDS]).to_disk(path)
    corpus = TokenizedCorpus.prepare(path, tmp_path / "cache", lang="xx", progress=False)
    assert list(corpus.segments()) == WORDS
    assert corpus.counts()["Công ty"] == 1 and not any("\u00a0" in word for word in corpus.counts())
    assert text_segments(path, "xx", 64, "spacy") == WORDS  # what `perplexity` scores: the same tokens


def test_a_byte_order_mark_is_not_part_of_the_first_token(tmp_path):
    text = "Der Fußball ist rund .\nDer Ball ist groß .\n"
    plain, packed = tmp_path / "a.txt", tmp_path / "b.txt.gz"
    plain.write_text("\ufeff" + text, encoding="utf-8")
    with gzip.open(packed, "wt", encoding="utf-8") as handle:
        handle.write("\ufeff" + text)
    for tokenizer in ("spacy", "whitespace"):
        corpus = TokenizedCorpus.prepare([plain, packed], tmp_path / tokenizer, lang="de", progress=False,
                                         tokenizer=tokenizer)
        assert corpus.counts()["Der"] == 4 and not any("\ufeff" in word for word in corpus.counts())
        assert text_segments(plain, "de", 64, tokenizer)[0][0] == "Der"
