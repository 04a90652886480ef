"""Regression: `.spacy` files outside the training loop.

- A damaged `.spacy` file given to `pretrain` (as `adapt-ewt` does) was reported by spaCy's E1014
  alone, which names no file: with a train and a dev DocBin the user could not tell which one to
  rebuild. The message now starts with the file's path.
- `perplexity` read a `.spacy` file as text: it scored its bytes and reported a perplexity of
  70,014 on 229,035 "tokens" for EWT dev (the run's own dev perplexity: 240.82 on 27,150). It now
  reads the file's sentences, as `pretrain` does, and gives the run's number.
"""
import json

import pytest
import spacy
from spacy.tokens import DocBin

from spacy_elmo.cli import app
from spacy_elmo.pretrain.text_corpus import CorpusError, text_segments

from ..cli.invoke import runner

SENTENCES = ["the cat sat on the mat .", "a dog ran off .", "birds fly south in winter ."]


def _docbin_bytes() -> bytes:
    nlp = spacy.blank("en")
    return DocBin(docs=[nlp(text) for text in SENTENCES]).to_bytes()


@pytest.mark.parametrize("damage", ["random", "truncated", "empty"])
def test_a_damaged_docbin_is_named(tmp_path, damage):
    whole = _docbin_bytes()
    data = {"random": bytes(range(256)) * 3, "truncated": whole[: len(whole) // 2], "empty": b""}[damage]
    path = tmp_path / "ewt dev.spacy"
    path.write_bytes(data)
    with pytest.raises(CorpusError, match="ewt dev.spacy: not a readable spaCy DocBin"):
        text_segments(path, "en", 64)


def test_pretrain_names_the_damaged_dev_file(tiny_config_path, tmp_path):
    good, bad = tmp_path / "train.spacy", tmp_path / "dev.spacy"
    good.write_bytes(_docbin_bytes())
    bad.write_bytes(_docbin_bytes()[:40])
    result = runner.invoke(app, ["pretrain", str(tiny_config_path), str(tmp_path / "run"), "--quiet",
                                 "--paths.train", str(good), "--paths.dev", str(bad)])
    assert result.exit_code == 1
    assert "dev.spacy: not a readable spaCy DocBin" in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_perplexity_reads_a_docbin_as_pretraining_does(tiny_config_path, tmp_path):
    docbin, text = tmp_path / "dev.spacy", tmp_path / "dev.txt"
    docbin.write_bytes(_docbin_bytes())
    text.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    assert text_segments(docbin, "en", 64) == text_segments(text, "en", 64, "whitespace")
    result = runner.invoke(app, ["pretrain", str(tiny_config_path), str(tmp_path / "run"), "--quiet",
                                 "--paths.train", str(text), "--paths.dev", str(docbin),
                                 "--training.max_steps", "2", "--training.threads", "1"])
    assert result.exit_code == 0, result.output
    logged = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()][-1]
    scored = runner.invoke(app, ["perplexity", str(tmp_path / "run" / "model-last"), str(docbin), "--json"])
    assert scored.exit_code == 0, scored.output
    found = json.loads(scored.output.strip().splitlines()[-1])
    assert found["tokens"] == logged["dev_tokens"] == 18 + 3  # 18 words, a sentence end for each
    assert found["mean"] == pytest.approx(logged["dev_mean"], rel=1e-5)
