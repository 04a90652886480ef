"""Distillation from a transformer teacher in pretraining, on a tiny random BERT teacher."""
from pathlib import Path

import numpy
import pytest
import torch

from spacy_elmo.bilm.language_model import sentence_batch
from spacy_elmo.pretrain import pretrain
from spacy_elmo.pretrain.building import build_language_model
from spacy_elmo.pretrain.distill import (
    DistilledLM,
    DistillTargets,
    Teacher,
    batch_sentences,
    resolve_teacher,
)
from spacy_elmo.pretrain.settings import SettingsError, load_config
from spacy_elmo.bilm.vocab import Vocabulary

transformers = pytest.importorskip("transformers", reason="distillation needs transformers (the distill extra)")

SENTENCES = [["The", "bank", "of", "the", "river", "."], ["Money", "in", "the", "bank"], ["Rivers", "flow"]]
WORDPIECES = ["the", "bank", "of", "river", "money", "in", "flow", "##s", "."]


@pytest.fixture(scope="module")
def teacher_dir(tmp_path_factory) -> Path:
    """A 2-layer, 16-wide random BERT with a tiny wordpiece vocabulary, saved as Hugging Face does."""
    from transformers import BertConfig, BertModel, BertTokenizerFast  # type: ignore[attr-defined]

    directory = tmp_path_factory.mktemp("teacher")
    vocab = directory / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDPIECES) + "\n")
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=5 + len(WORDPIECES), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64,
    )
    BertModel(config).save_pretrained(directory)
    # positional: vocab_file (transformers 4) or vocab (5)
    BertTokenizerFast(str(vocab), do_lower_case=True).save_pretrained(directory)
    return directory


def tiny_lm(tiny_config_path):
    config = load_config(tiny_config_path)
    words = sorted({w for s in SENTENCES for w in s})
    vocab = Vocabulary(["<S>", "</S>", "<UNK>"] + words)
    return build_language_model(config, vocab, seed=0), vocab


def test_teacher_averages_each_tokens_wordpieces(teacher_dir):
    teacher = Teacher(teacher_dir, layer=-1)
    vectors, mask = teacher.token_vectors(SENTENCES)
    assert vectors.shape == (sum(map(len, SENTENCES)), 16) and bool(mask.all())
    # "Rivers" is river ##s: its vector is the mean of those two wordpieces' states
    encoded = teacher.tokenizer([SENTENCES[2]], is_split_into_words=True, return_tensors="pt")
    with torch.no_grad():
        hidden = teacher.model(**encoded, output_hidden_states=True).hidden_states[-1][0]
    pieces = [t for t, w in enumerate(encoded.word_ids(0)) if w == 0]
    assert len(pieces) == 2
    torch.testing.assert_close(vectors[-2], hidden[pieces].mean(0), rtol=1e-5, atol=1e-6)


def test_a_lower_teacher_layer_runs_only_the_blocks_below_it(teacher_dir):
    from transformers import AutoModel

    full = AutoModel.from_pretrained(str(teacher_dir)).eval()
    for layer in (0, 1):  # the embeddings, the first block's output
        teacher = Teacher(teacher_dir, layer=layer)
        assert len(teacher.model.encoder.layer) == max(layer, 1)
        vectors, _ = teacher.token_vectors([SENTENCES[1]])  # one wordpiece per token: the states themselves
        encoded = teacher.tokenizer([SENTENCES[1]], is_split_into_words=True, return_tensors="pt")
        with torch.no_grad():
            hidden = full(**encoded, output_hidden_states=True).hidden_states[layer][0, 1:-1]
        torch.testing.assert_close(vectors, hidden, rtol=1e-5, atol=1e-6)


def test_wordpieces_beyond_the_limit_are_masked(teacher_dir):
    teacher = Teacher(teacher_dir, max_wordpieces=5)  # [CLS] + 3 pieces + [SEP]
    _, mask = teacher.token_vectors([SENTENCES[0]])
    assert mask.tolist() == [True, True, True, False, False, False]


def test_token_features_are_the_biLMs_top_layer(tiny_config_path):
    lm, vocab = tiny_lm(tiny_config_path)
    lm.eval()
    distilled = DistilledLM(lm, teacher_dim=16)
    batch = sentence_batch(SENTENCES, vocab)
    assert batch_sentences(batch) == SENTENCES
    with torch.no_grad():
        rows, outputs, _ = lm.run_layers(batch)
        features = distilled.token_features(batch, rows.table, rows.index, outputs)
        reference = torch.cat([layers[-1] for layers in lm.bilm(SENTENCES).unpadded()])
    torch.testing.assert_close(features, reference, rtol=1e-5, atol=1e-6)


def test_the_distillation_gradient_reaches_the_biLM_and_the_lm_loss_is_unchanged(tiny_config_path, teacher_dir):
    lm, vocab = tiny_lm(tiny_config_path)
    teacher = Teacher(teacher_dir)
    batch = sentence_batch(SENTENCES, vocab)
    for layer in ("top", "mix"):
        distilled = DistilledLM(lm, teacher.dim, layer=layer)
        targets = DistillTargets(*teacher.token_vectors(SENTENCES))
        generator = torch.Generator().manual_seed(1)
        losses, counts, _, distill = distilled(batch, targets, generator=generator)
        plain, plain_counts, _ = lm(batch, generator=torch.Generator().manual_seed(1))
        torch.testing.assert_close(losses, plain, rtol=0, atol=0)  # the LM losses are exactly the LM's
        assert torch.equal(counts, plain_counts)
        lm.zero_grad()
        distill.backward()
        lstm_grad = lm.bilm.lstm.weight_ih[0].grad
        assert lstm_grad is not None and lstm_grad.abs().sum() > 0
        assert lm.bilm.token_encoder.char_embed.grad.abs().sum() > 0
        assert distilled.map.weight.grad.abs().sum() > 0
        assert lm.head.weight.grad is None or lm.head.weight.grad.abs().sum() == 0  # the softmax is not involved
        if layer == "mix":
            assert distilled.mix_logits is not None and distilled.mix_logits.grad.abs().sum() > 0


def _run(tiny_config_path, small_corpus, **overrides):
    settings = {"paths.train": str(small_corpus), "training.max_steps": 3, "training.eval_every": 3,
                "training.checkpoint_every": 2, "training.threads": 1, "paths.dev": str(small_corpus),
                "corpus.dev_max_tokens": 300}
    settings.update(overrides)
    return load_config(tiny_config_path, settings)


def test_pretrain_with_a_teacher_logs_its_loss_and_resumes(tiny_config_path, small_corpus, teacher_dir, tmp_path):
    import json

    config = _run(tiny_config_path, small_corpus, **{"training.distill.teacher": str(teacher_dir)})
    result = pretrain(config, tmp_path / "run", progress=False)
    assert result["step"] == 3
    rows = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert any("train_distill_loss" in row and numpy.isfinite(row["train_distill_loss"]) for row in rows)
    from spacy_elmo.pretrain.checkpoint import load_checkpoint

    state = load_checkpoint(tmp_path / "run" / "checkpoint.pt")
    assert "map.weight" in state["distill"]
    # without a teacher the same settings train the LM alone, and no distillation state is kept
    plain = pretrain(_run(tiny_config_path, small_corpus), tmp_path / "plain", progress=False)
    assert plain["step"] == 3 and "distill" not in load_checkpoint(tmp_path / "plain" / "checkpoint.pt")
    rows = [json.loads(line) for line in (tmp_path / "plain" / "log.jsonl").read_text().splitlines()]
    assert not any("train_distill_loss" in row for row in rows)


def test_settings_errors(tiny_config_path, small_corpus, teacher_dir, tmp_path):
    teacher = {"training.distill.teacher": str(teacher_dir)}
    with pytest.raises(SettingsError, match="mode"):
        config = _run(tiny_config_path, small_corpus, **teacher, **{"training.mode": "stream"})
        pretrain(config, tmp_path / "a", progress=False)
    with pytest.raises(SettingsError, match="layer"):
        _run(tiny_config_path, small_corpus, **{"training.distill.layer": "middle"})
    with pytest.raises(SettingsError, match="neither a directory nor an installed package"):
        config = _run(tiny_config_path, small_corpus, **{"training.distill.teacher": "no-such-teacher-pkg"})
        pretrain(config, tmp_path / "b", progress=False)
    with pytest.raises(SettingsError, match="teacher_layer = 7"):
        config = _run(tiny_config_path, small_corpus, **teacher, **{"training.distill.teacher_layer": 7})
        pretrain(config, tmp_path / "c", progress=False)
    with pytest.raises(SettingsError, match="unknown override"):
        _run(tiny_config_path, small_corpus, **{"training.distill.weights": 1.0})


def test_an_installed_package_names_its_model_directory(tmp_path, monkeypatch):
    package = tmp_path / "fake_teacher_pkg"
    (package / "model").mkdir(parents=True)
    (package / "__init__.py").write_text("from pathlib import Path\nMODEL_DIR = Path(__file__).parent / 'model'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert resolve_teacher("fake-teacher-pkg") == package / "model"
