"""scripts/tag_breakdown.py: a tagger's accuracy split by training frequency, ambiguity, tokenizer and
gold tag, for several pipelines (seeds averaged), on gold tokens."""
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import spacy
from spacy.tokens import Doc, DocBin
from spacy.training import Example

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import tag_breakdown  # noqa: E402

SCRIPT = Path(tag_breakdown.__file__)
TRAIN = [("the cat sat on the mat", "DT NN VBD IN DT NN"), ("a dog ran", "DT NN VBD"),
         ("the dog sat", "DT NN VBD"), ("birds fly", "NNS VBP")]
TEST = [("the bird sat on a mat", "DT NN VBD IN DT NN"), ("a cat ran", "DT NN VBD")]


def _docs(nlp, data):
    return [Example.from_dict(nlp.make_doc(text), {"tags": tags.split()}).reference for text, tags in data]


def test_groups_of_a_token():
    counts, tags = Counter({"the": 150, "run": 5}), {"the": {"DT"}, "run": {"VB", "NN"}}
    assert tag_breakdown.token_groups("the", "DT", counts, tags, True) == [
        "all", "seen 100+ times", "one tag in train", "the tokenizer finds it", "gold DT"]
    assert tag_breakdown.token_groups("run", "NN", counts, tags, False) == [
        "all", "seen 1-9 times", "several tags in train", "the tokenizer splits it otherwise", "gold NN"]
    assert tag_breakdown.token_groups("zebra", "NN", counts, tags, True)[:3] == [
        "all", "unseen in train", "the tokenizer finds it"]


def test_tokenizer_agreement_is_per_gold_token():
    nlp = spacy.blank("en")
    glued = Doc(nlp.vocab, words=["e", "mail", "me"], spaces=[False, True, False])  # text "email me"
    plain = Doc(nlp.vocab, words=["the", "cat"], spaces=[True, False])
    assert tag_breakdown.tokenizer_agrees(nlp, [glued, plain]) == [[False, False, True], [True, True]]


def test_scores_and_the_gain_by_group():
    nlp = spacy.blank("en")
    gold = _docs(nlp, TEST)
    predicted = [Doc(nlp.vocab, words=[t.text for t in d]) for d in gold]
    for doc, tags in zip(predicted, [["DT", "NN", "VBD", "IN", "DT", "VB"], ["DT", "NN", "NN"]]):
        for token, tag in zip(doc, tags):
            token.tag_ = tag
    counts, tags = tag_breakdown.train_lexicon(_docs(nlp, TRAIN), "tag")
    agrees = [[True] * len(d) for d in gold]
    total, right = tag_breakdown.score_groups(gold, predicted, "tag", counts, tags, agrees)
    assert (total["all"], right["all"]) == (9, 7)
    assert (total["unseen in train"], right["unseen in train"]) == (1, 1)  # "bird"
    assert (total["gold VBD"], right["gold VBD"]) == (2, 1)
    with pytest.raises(ValueError, match="tokenization"):
        tag_breakdown.score_groups(gold, [predicted[1], predicted[0]], "tag", counts, tags, agrees)
    accuracy = {"a": {g: 0.5 for g in total}, "b": {g: right[g] / total[g] for g in total}}
    table = tag_breakdown.markdown(total, accuracy, min_tokens=2)
    lines = table.splitlines()
    assert lines[0] == "| group | tokens | share | a | b | b - a | share of the gain |"
    assert lines[2].startswith("| all | 9 | 100.0% | 50.00 | 77.78 | +27.78 | 100% |")
    assert any(line.startswith("| gold NN | 3 |") for line in lines)
    assert not any("gold IN" in line for line in lines)  # one token: under min_tokens


def test_run_options_group_seeds_in_order():
    assert tag_breakdown.parse_runs(["b=x", "e=y", "b=z"]) == {"b": ["x", "z"], "e": ["y"]}
    with pytest.raises(SystemExit, match="NAME=PIPELINE_PATH"):
        tag_breakdown.parse_runs(["nopath"])


def test_the_script_scores_trained_pipelines(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("tagger")
    train = [Example(nlp.make_doc(d.text), d) for d in _docs(nlp, TRAIN)]
    optimizer = nlp.initialize(lambda: train)
    nlp.to_disk(tmp_path / "untrained")
    for _ in range(30):
        nlp.update(train, sgd=optimizer)
    nlp.to_disk(tmp_path / "trained")
    DocBin(docs=_docs(nlp, TRAIN)).to_disk(tmp_path / "train.spacy")
    DocBin(docs=_docs(nlp, TEST)).to_disk(tmp_path / "test.spacy")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "test.spacy"), "--train", str(tmp_path / "train.spacy"),
         "--run", f"before={tmp_path / 'untrained'}", "--run", f"after={tmp_path / 'trained'}",
         "--run", f"after={tmp_path / 'trained'}", "--attr", "tag", "--min-tokens", "1",
         "--output", str(tmp_path / "out" / "table.md")],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    table = (tmp_path / "out" / "table.md").read_text()
    assert table in done.stdout
    rows = {line.split(" | ")[0][2:]: line.split(" | ") for line in table.splitlines()[2:]}
    assert rows["all"][1] == "9" and rows["unseen in train"][1] == "1"
    before, after = float(rows["all"][3]), float(rows["all"][4])
    assert after >= 100 * 7 / 9 - 0.01 and after > before  # it learned the tags (an unseen word may miss)


def test_the_script_refuses_a_missing_file(tmp_path):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "nothing.spacy"), "--train", str(tmp_path / "t.spacy"),
         "--run", "a=b"], capture_output=True, text=True, timeout=600,
    )
    assert done.returncode != 0 and "no such .spacy file" in done.stderr
