"""`[training.distill] loss = "similarity"`: the layer's cosines between a word's occurrences follow the targets'."""
import json

import numpy
import pytest
import torch

from spacy_elmo.bilm.language_model import sentence_batch
from spacy_elmo.bilm.vocab import Vocabulary
from spacy_elmo.pretrain import pretrain
from spacy_elmo.pretrain.building import build_language_model
from spacy_elmo.pretrain.checkpoint import load_checkpoint
from spacy_elmo.pretrain.distill import DistillTargets, WordTableTeacher, build_distillation
from spacy_elmo.pretrain.settings import SettingsError, load_config
from spacy_elmo.pretrain.similarity import SameWordSimilarity
from spacy_elmo.pretrain.word_table import write_word_table

# "bank" four times, in four sentences; "river" twice
SENTENCES = [["The", "bank", "of", "the", "river"], ["Money", "in", "the", "bank"], ["A", "bank", "loan"],
             ["Bank", "of", "the", "river"]]


def _batch_of(words_per_sentence):
    words = [w for s in words_per_sentence for w in s]
    sentences = [b for b, s in enumerate(words_per_sentence) for _ in s]
    return words, sentences


def test_the_loss_is_zero_where_the_layers_cosines_are_the_targets_and_positive_elsewhere():
    words, sentences = _batch_of(SENTENCES)
    targets = torch.randn(len(words), 6, generator=torch.Generator().manual_seed(0))
    same = SameWordSimilarity(bank_tokens=0, partners=4)(targets * 3.0, targets, words, sentences)
    assert float(same) == pytest.approx(0.0, abs=1e-6)  # the scale of a vector does not matter, its angles do
    other = torch.randn(len(words), 6, generator=torch.Generator().manual_seed(1))
    assert float(SameWordSimilarity(bank_tokens=0, partners=4)(other, targets, words, sentences)) > 1e-3


def test_only_a_words_occurrences_in_other_sentences_are_compared_and_only_the_anchor_learns():
    words, sentences = _batch_of(SENTENCES)
    loss = SameWordSimilarity(bank_tokens=0, partners=4)
    anchors, from_bank, rows = loss._partners([w.lower() for w in words], sentences)
    by_word = {words[a].lower() for a in anchors}
    assert by_word == {"bank", "the"}  # "the" four times in three sentences; "river" has one partner only
    for anchor, partners in zip(anchors, rows):
        found = [r for r in partners if r >= 0]
        assert all(words[r].lower() == words[anchor].lower() and sentences[r] != sentences[anchor] for r in found)
    assert not any(any(row) for row in from_bank)  # no bank
    features = torch.randn(len(words), 6, generator=torch.Generator().manual_seed(2), requires_grad=True)
    loss(features, torch.randn(len(words), 6), words, sentences).backward()
    learned = {i for i in range(len(words)) if features.grad[i].abs().sum() > 0}
    assert learned and learned <= set(anchors)


def test_the_bank_gives_partners_from_earlier_batches_and_forgets_its_oldest():
    loss = SameWordSimilarity(bank_tokens=6, partners=3)
    first = [["bank", "x"], ["bank", "y"]]
    words, sentences = _batch_of(first)
    features = torch.randn(4, 5, generator=torch.Generator().manual_seed(3))
    assert float(loss(features, features, words, sentences)) == 0.0  # one partner each: nothing to rank
    assert loss.slots_of["bank"] == deque_of(0, 2)
    words, sentences = _batch_of([["bank", "z", "w"]])  # alone in its batch, two partners in the bank
    anchors, from_bank, rows = loss._partners(words, [k + loss.sentences_seen for k in sentences])
    assert anchors == [0] and from_bank == [[True, True, False]] and rows == [[2, 0, -1]]  # most recent first
    loss(torch.randn(3, 5), torch.randn(3, 5), words, sentences)
    # six slots: the second batch's last token overwrote the first batch's first "bank"
    assert loss.slots_of["bank"] == deque_of(2, 4)
    assert loss.slot_word[0] == "w" and loss.sentences_seen == 3
    loss(torch.randn(1, 5), torch.randn(1, 5), ["v"], [0])
    assert "x" not in loss.slots_of and loss.slot_word[1] == "v"
    # a batch larger than the bank keeps its last tokens
    many = [[f"w{i}"] for i in range(10)]
    words, sentences = _batch_of(many)
    loss(torch.randn(10, 5), torch.randn(10, 5), words, sentences)
    assert sorted(loss.slot_word) == sorted(f"w{i}" for i in range(4, 10))
    numpy.testing.assert_equal(sum(len(d) for d in loss.slots_of.values()), 6)


def deque_of(*slots):
    from collections import deque

    return deque(slots)


def test_training_on_the_loss_makes_the_layer_rank_a_words_occurrences_as_the_targets_do():
    rng = torch.Generator().manual_seed(4)
    sentences = [["bank", f"w{i}"] for i in range(12)]
    words, keys = _batch_of(sentences)
    targets = torch.randn(len(words), 8, generator=rng)
    features = torch.randn(len(words), 8, generator=rng, requires_grad=True)
    optimizer = torch.optim.Adam([features], lr=0.05)
    bank = [w == "bank" for w in words]

    def nearest_agree():
        unit_h = torch.nn.functional.normalize(features.detach()[bank], dim=-1)
        unit_t = torch.nn.functional.normalize(targets[bank], dim=-1)
        sim_h, sim_t = unit_h @ unit_h.T, unit_t @ unit_t.T
        sim_h.fill_diagonal_(-2), sim_t.fill_diagonal_(-2)
        return float((sim_h.argmax(1) == sim_t.argmax(1)).float().mean())

    before = nearest_agree()
    losses = []
    for _ in range(150):
        optimizer.zero_grad()
        loss = SameWordSimilarity(bank_tokens=0, partners=16)(features, targets, words, keys)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < 0.2 * losses[0]
    assert nearest_agree() == 1.0 > before


def _table(tmp_path):
    words = ["the", "of", "and", "a", "to", "in", "bank", "river", "money", "loan"]
    write_word_table(tmp_path / "table", words, numpy.random.default_rng(0).normal(size=(len(words), 5)),
                     dtype="float32")
    return tmp_path / "table"


def test_the_distilled_lm_with_the_similarity_loss_has_no_map_and_trains_the_biLM(tiny_config_path, tmp_path):
    config = load_config(tiny_config_path)
    lm = build_language_model(config, Vocabulary(["<S>", "</S>", "<UNK>"] + sorted({w for s in SENTENCES for w in s})),
                              seed=0)
    settings = dict(config["training"]["distill"])
    settings.update(teacher=str(_table(tmp_path)), targets="sentence", loss="similarity", similarity_partners=4)
    targets, distilled = build_distillation(lm, settings, "sentences", "cpu")
    assert distilled.map is None and isinstance(distilled.similarity, SameWordSimilarity)
    assert distilled.similarity.partners == 4
    batch = sentence_batch(SENTENCES, lm.vocab)
    generator = torch.Generator().manual_seed(1)
    wanted = DistillTargets(*targets.token_vectors(SENTENCES))
    losses, counts, _, distill = distilled(batch, wanted, generator=generator)
    plain, _, _ = lm(batch, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(losses, plain, rtol=0, atol=0)  # the LM losses are exactly the LM's
    assert float(distill.detach()) > 0
    lm.zero_grad()
    distill.backward()
    assert lm.bilm.lstm.weight_ih[0].grad.abs().sum() > 0
    assert lm.head.weight.grad is None or lm.head.weight.grad.abs().sum() == 0
    with pytest.raises(Exception, match="uses no map"):
        build_distillation(lm, {**settings, "map": "orthogonal"}, "sentences", "cpu")
    with pytest.raises(Exception, match="at least 2"):
        build_distillation(lm, {**settings, "similarity_partners": 1}, "sentences", "cpu")
    with pytest.raises(Exception, match="loss = 'mse'"):
        build_distillation(lm, {**settings, "loss": "mse"}, "sentences", "cpu")
    # the run vocabulary's most frequent words (here: the table's order) can be left out of the loss
    frequent = ["the", "of", "bank"]
    skipping = build_distillation(lm, {**settings, "similarity_skip_frequent": 2}, "sentences", "cpu",
                                  frequent=frequent)
    assert skipping[1].similarity.skip_words == {"the", "of"}
    with pytest.raises(Exception, match="needs loss = \"similarity\""):
        build_distillation(lm, {**settings, "loss": "regression", "similarity_skip_frequent": 2}, "sentences", "cpu")
    # the regression loss is as it was: a map, and no similarity
    assert build_distillation(lm, {**settings, "loss": "regression"}, "sentences", "cpu")[1].similarity is None
    assert isinstance(WordTableTeacher(_table(tmp_path)).dim, int)


def test_pretrain_with_the_similarity_loss_logs_it_and_keeps_no_map(tiny_config_path, small_corpus, tmp_path):
    settings = {"paths.train": str(small_corpus), "paths.dev": str(small_corpus), "training.max_steps": 3,
                "training.eval_every": 3, "training.checkpoint_every": 2, "training.threads": 1,
                "corpus.dev_max_tokens": 300, "training.distill.teacher": str(_table(tmp_path)),
                "training.distill.targets": "sentence", "training.distill.loss": "similarity"}
    result = pretrain(load_config(tiny_config_path, settings), tmp_path / "run", progress=False)
    assert result["step"] == 3
    rows = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    logged = [row["train_distill_loss"] for row in rows if "train_distill_loss" in row]
    assert logged and all(numpy.isfinite(logged)) and max(logged) > 0
    assert not any(key.startswith("map.") for key in load_checkpoint(tmp_path / "run" / "checkpoint.pt")["distill"])
    # a resumed run continues with the same loss (its bank starts empty again)
    longer = load_config(tiny_config_path, {**settings, "training.max_steps": 5, "training.eval_every": 5})
    assert pretrain(longer, tmp_path / "run", resume=True, progress=False)["step"] == 5
    rows = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert rows[-1]["step"] == 5 and numpy.isfinite(rows[-1]["train_distill_loss"])
    with pytest.raises(SettingsError, match="similarity_temperature"):
        load_config(tiny_config_path, {**settings, "training.distill.similarity_temperature": 0})


@pytest.mark.parametrize("skip", [(), ("w0", "W1")])
def test_the_loss_is_its_definition_over_batches_with_a_bank(skip):
    """Against a plain loop over each occurrence: its word's other occurrences in the batch in order,
    then in the earlier batches' last `bank_tokens` tokens, most recent first, at most `partners`
    (more than the batch holds, so that the bank's are compared too). Skipped words are neither
    anchors nor partners and take no place in the bank."""
    rng = numpy.random.default_rng(5)
    skipped = {w.lower() for w in skip}
    loss, history, temperature = SameWordSimilarity(40, 12, 0.2, skip_words=skip), [], 0.2
    for step in range(6):
        n = 30
        words = [f"w{i}" for i in rng.integers(0, 6, n)]
        sentences = sorted(rng.integers(0, 8, n).tolist())
        features = torch.tensor(rng.normal(size=(n, 4)), dtype=torch.float32)
        targets = torch.tensor(rng.normal(size=(n, 3)), dtype=torch.float32)
        found = float(loss(features, targets, words, sentences))
        unit = lambda v: v / v.norm()  # noqa: E731
        kls = []
        for i in range(n):
            if words[i] in skipped:
                continue
            partners = [(features[j], targets[j]) for j in range(n)
                        if words[j] == words[i] and sentences[j] != sentences[i]]
            partners += [(h, t) for w, key, h, t in reversed(history[-40:])
                         if w == words[i] and key != (step, sentences[i])]
            partners = partners[:12]
            if len(partners) < 2:
                continue
            layer = torch.stack([unit(features[i]) @ unit(h) for h, _ in partners]) / temperature
            wanted = torch.stack([unit(targets[i]) @ unit(t) for _, t in partners]) / temperature
            p = torch.softmax(wanted, 0)
            kls.append(float((p * (torch.log_softmax(wanted, 0) - torch.log_softmax(layer, 0))).sum()))
        history += [(words[i], (step, sentences[i]), features[i], targets[i])
                    for i in range(n) if words[i] not in skipped]
        assert found == pytest.approx(numpy.mean(kls) if kls else 0.0, rel=1e-5, abs=1e-6)
