"""Distillation from a transformer teacher in pretraining, on a tiny random BERT teacher."""
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


def test_length_chunks_bound_the_padded_positions():
    from spacy_elmo.pretrain.distill import length_chunks

    lengths = [5, 30, 2, 9, 9, 40, 1, 12]
    chunks = length_chunks(lengths, max_padded=30)
    assert sorted(i for chunk in chunks for i in chunk) == list(range(len(lengths)))
    for chunk in chunks:  # a chunk's padded size stays in the bound, unless one sentence alone exceeds it
        assert max(lengths[i] for i in chunk) * len(chunk) <= 30 or len(chunk) == 1
    assert [5] in chunks  # the 40-long sentence runs alone
    assert length_chunks([], 10) == []


def test_chunked_sentences_get_the_vectors_of_one_padded_batch(teacher_dir):
    sentences = SENTENCES + [["the", "river"], SENTENCES[0] * 3, ["flow"]]
    whole, whole_mask = Teacher(teacher_dir, chunk_wordpieces=10**6).token_vectors(sentences)
    for size in (1, 8, 20):  # every sentence alone, and groups of several
        vectors, mask = Teacher(teacher_dir, chunk_wordpieces=size).token_vectors(sentences)
        assert torch.equal(mask, whole_mask)
        torch.testing.assert_close(vectors, whole, rtol=1e-5, atol=1e-6)


def test_teacher_precision(teacher_dir, monkeypatch):
    from spacy_elmo.pretrain import building
    from spacy_elmo.pretrain.distill import DistillError, teacher_precision

    cpu = torch.device("cpu")
    assert teacher_precision("float32", cpu) == "float32"
    monkeypatch.setattr(building, "native_cpu_bfloat16", lambda: False)
    assert teacher_precision("auto", cpu) == "float32"
    with pytest.raises(DistillError, match="does not compute bfloat16 natively"):
        teacher_precision("bfloat16", cpu)
    with pytest.raises(DistillError, match="choose one of"):
        teacher_precision("float16", cpu)
    monkeypatch.setattr(building, "native_cpu_bfloat16", lambda: True)
    assert teacher_precision("auto", cpu) == "bfloat16"
    exact, _ = Teacher(teacher_dir).token_vectors(SENTENCES)
    teacher = Teacher(teacher_dir, precision="auto")
    assert teacher.precision == "bfloat16"
    vectors, _ = teacher.token_vectors(SENTENCES)
    assert vectors.dtype == torch.float32 and not torch.equal(vectors, exact)  # it did run in bfloat16
    assert torch.nn.functional.cosine_similarity(vectors, exact).min() > 0.98


def test_an_orthogonal_map_keeps_the_layers_angles(tiny_config_path, teacher_dir):
    lm, vocab = tiny_lm(tiny_config_path)
    batch = sentence_batch(SENTENCES, vocab)
    width = lm.bilm.config.width
    for teacher_dim in (width + 5, max(2, width // 2)):  # wider than the layer: an isometry
        distilled = DistilledLM(lm, teacher_dim, map_kind="orthogonal")
        weight = distilled.map.weight.detach()
        if teacher_dim >= width:
            torch.testing.assert_close(weight.T @ weight, torch.eye(width), rtol=0, atol=1e-5)
        else:
            torch.testing.assert_close(weight @ weight.T, torch.eye(teacher_dim), rtol=0, atol=1e-5)
    distilled = DistilledLM(lm, width + 5, map_kind="orthogonal")
    with torch.no_grad():
        distilled.log_scale.fill_(0.7)
        rows, outputs, _ = lm.run_layers(batch)
        features = distilled.token_features(batch, rows.table, rows.index, outputs)
        mapped = (distilled.map(features) - distilled.map.bias) * distilled.log_scale.exp()
    cosine = torch.nn.functional.cosine_similarity
    torch.testing.assert_close(cosine(mapped[:, None], mapped[None], dim=-1),
                               cosine(features[:, None], features[None], dim=-1), rtol=0, atol=1e-5)
    torch.testing.assert_close(mapped.norm(dim=1), features.norm(dim=1) * torch.e ** 0.7, rtol=1e-5, atol=1e-5)
    # the orthogonal map, its scale and the biLM all learn from the distillation loss
    targets = DistillTargets(*Teacher(teacher_dir).token_vectors(SENTENCES))
    distilled = DistilledLM(lm, 16, map_kind="orthogonal")
    lm.zero_grad()
    distilled(batch, targets, generator=torch.Generator().manual_seed(1))[3].backward()
    assert distilled.log_scale.grad is not None and distilled.log_scale.grad != 0
    assert distilled.map.parametrizations.weight.original.grad.abs().sum() > 0
    assert lm.bilm.lstm.weight_ih[0].grad.abs().sum() > 0
    with pytest.raises(Exception, match="map = 'affine'"):
        DistilledLM(lm, 16, map_kind="affine")


def test_a_word_table_teacher_distils_its_vectors_into_the_token_layer(tiny_config_path, tmp_path):
    from spacy_elmo.pretrain.distill import WordTableTeacher
    from spacy_elmo.pretrain.word_table import write_word_table

    words = ["the", "bank", "river"]
    vectors = numpy.arange(12, dtype=numpy.float32).reshape(3, 4)
    write_word_table(tmp_path / "table", words, vectors, dtype="float32")
    teacher = WordTableTeacher(tmp_path / "table")
    found, mask = teacher.token_vectors([["The", "bank", "of"], ["river"]])
    assert mask.tolist() == [True, True, False, True]  # looked up lower-cased; "of" is not in the table
    numpy.testing.assert_array_equal(found[mask].numpy(), vectors[[0, 1, 2]])
    assert not found[~mask].any()

    lm, vocab = tiny_lm(tiny_config_path)
    distilled = DistilledLM(lm, teacher.dim, layer="token")
    batch = sentence_batch(SENTENCES, vocab)
    with torch.no_grad():
        rows, outputs, _ = lm.run_layers(batch)
        features = distilled.token_features(batch, rows.table, rows.index, outputs)
        reference = torch.cat([layers[0] for layers in lm.bilm(SENTENCES).unpadded()])
    torch.testing.assert_close(features, reference, rtol=1e-5, atol=1e-6)  # ELMo's layer 0, [x; x]
    lm.zero_grad()
    targets = DistillTargets(*teacher.token_vectors(SENTENCES))
    distilled(batch, targets, generator=torch.Generator().manual_seed(1))[3].backward()
    assert lm.bilm.token_encoder.char_embed.grad.abs().sum() > 0
    assert lm.bilm.lstm.weight_ih[0].grad is None or lm.bilm.lstm.weight_ih[0].grad.abs().sum() == 0


def _word_table(tmp_path):
    """A 5-d random table of six frequent words."""
    from spacy_elmo.pretrain.word_table import write_word_table

    words = ["the", "of", "and", "a", "to", "in"]
    write_word_table(tmp_path / "table", words, numpy.random.default_rng(0).normal(size=(6, 5)), dtype="float32")
    return tmp_path / "table"


def test_pretrain_with_a_word_table_teacher(tiny_config_path, small_corpus, tmp_path):
    from spacy_elmo.pretrain.checkpoint import load_checkpoint

    settings = {"training.distill.teacher": str(_word_table(tmp_path)), "training.distill.layer": "token"}
    result = pretrain(_run(tiny_config_path, small_corpus, **settings), tmp_path / "run", progress=False)
    assert result["step"] == 3
    assert load_checkpoint(tmp_path / "run" / "checkpoint.pt")["distill"]["map.weight"].shape[0] == 5
    with pytest.raises(SettingsError, match="needs no cache"):
        config = _run(tiny_config_path, small_corpus, **settings, **{"training.distill.cache": str(tmp_path / "c")})
        pretrain(config, tmp_path / "cached", progress=False)


def test_context_targets_are_the_vectors_minus_their_words_means(teacher_dir):
    from spacy_elmo.pretrain.distill import ContextTargets

    teacher = Teacher(teacher_dir)
    corpus = SENTENCES * 3 + [["flow", "of", "money"]]
    targets = ContextTargets(teacher, iter(corpus), n_tokens=10**6, min_count=4, batch_tokens=7)
    frequent = {"the", "bank", "of", "flow"}  # 4 or more times; "The", "Rivers", "money" ... fewer
    assert set(targets.index) == frequent and targets.fitted_tokens == 39
    vectors, mask = teacher.token_vectors(corpus)
    context, context_mask = targets.token_vectors(corpus)
    words = [w for s in corpus for w in s]
    assert context_mask.tolist() == [w in frequent for w in words]
    assert not context[~context_mask].any()
    for word in frequent:  # over the fitted tokens, each word's context parts average to zero
        rows = [i for i, w in enumerate(words) if w == word]
        torch.testing.assert_close(context[rows].mean(0), torch.zeros(teacher.dim), rtol=0, atol=1e-5)
        torch.testing.assert_close(context[rows[0]], vectors[rows[0]] - vectors[rows].mean(0), rtol=0, atol=1e-5)
    # only the first n_tokens are fitted (whole segments): one sentence of six tokens
    first = ContextTargets(teacher, iter(corpus), n_tokens=5, min_count=1)
    assert first.fitted_tokens == 6 and set(first.index) == set(SENTENCES[0])


def test_pretrain_with_context_targets(tiny_config_path, small_corpus, teacher_dir, tmp_path):
    settings = {"training.distill.teacher": str(teacher_dir), "training.distill.targets": "context",
                "training.distill.context_min_count": 2}
    result = pretrain(_run(tiny_config_path, small_corpus, **settings), tmp_path / "run", progress=False)
    assert result["step"] == 3
    import json

    rows = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert any(numpy.isfinite(row.get("train_distill_loss", numpy.nan)) for row in rows)
    with pytest.raises(SettingsError, match="targets"):
        _run(tiny_config_path, small_corpus, **{"training.distill.targets": "sense"})


def test_sentence_targets_are_the_mean_of_the_sentences_other_vectors(tmp_path):
    from spacy_elmo.pretrain.distill import SentenceTargets, WordTableTeacher
    from spacy_elmo.pretrain.word_table import write_word_table

    vectors = numpy.array([[1, 0], [0, 2], [4, 4]], dtype=numpy.float32)  # the, bank, river
    write_word_table(tmp_path / "table", ["the", "bank", "river"], vectors, dtype="float32")
    targets = SentenceTargets(WordTableTeacher(tmp_path / "table"))
    assert targets.dim == 2
    sentences = [["The", "bank", "of", "the", "river"], ["river"], ["of", "bank"]]
    found, mask = targets.token_vectors(sentences)
    # "of" has no vector: it is left out of every mean, but its own sentence still gives it a target
    expected = [
        ([0, 2] + [1, 0] + [4, 4], 3),  # The: bank, the, river
        ([1, 0] + [1, 0] + [4, 4], 3),  # bank: The, the, river
        ([1, 0] + [0, 2] + [1, 0] + [4, 4], 4),  # of: all four with a vector
        ([1, 0] + [0, 2] + [4, 4], 3),  # the
        ([1, 0] + [0, 2] + [1, 0], 3),  # river
    ]
    sums = {"The": [5, 6], "bank": [6, 4], "of": [6, 6], "the": [5, 6], "river": [2, 2]}
    for row, word in enumerate(sentences[0]):
        count = expected[row][1]
        numpy.testing.assert_allclose(found[row].numpy(), numpy.array(sums[word]) / count, rtol=1e-6)
    # "river" alone and "bank" beside "of" have no other token with a vector: out of the loss
    assert mask.tolist() == [True] * 5 + [False] + [True, False]
    numpy.testing.assert_allclose(found[6].numpy(), vectors[1])  # "of": the mean of "bank" alone

    # the most frequent words (here "the", any case) stay out of the means, and have no target alone
    rare = SentenceTargets(WordTableTeacher(tmp_path / "table"), skip=["<S>", "The"])
    found, mask = rare.token_vectors(sentences[:1])
    numpy.testing.assert_allclose(found.numpy(), [[2, 3], [4, 4], [2, 3], [2, 3], [0, 2]], rtol=1e-6)
    assert mask.tolist() == [True] * 5


def test_pretrain_with_sentence_targets_from_a_word_table(tiny_config_path, small_corpus, tmp_path):
    import json

    settings = {"training.distill.teacher": str(_word_table(tmp_path)), "training.distill.targets": "sentence"}
    result = pretrain(_run(tiny_config_path, small_corpus, **settings), tmp_path / "run", progress=False)
    assert result["step"] == 3
    rows = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert any(numpy.isfinite(row.get("train_distill_loss", numpy.nan)) for row in rows)
    with pytest.raises(SettingsError, match='use "token" or "sentence"'):
        config = _run(tiny_config_path, small_corpus, **{**settings, "training.distill.targets": "context"})
        pretrain(config, tmp_path / "context", progress=False)
    skip = {"training.distill.sentence_skip_frequent": 5}
    result = pretrain(_run(tiny_config_path, small_corpus, **settings, **skip), tmp_path / "rare", progress=False)
    assert result["step"] == 3
    with pytest.raises(SettingsError, match='sentence_skip_frequent = 5 needs targets = "sentence"'):
        config = _run(tiny_config_path, small_corpus, **{**settings, **skip, "training.distill.targets": "token"})
        pretrain(config, tmp_path / "token", progress=False)


def test_the_sentence_targets_skip_the_runs_most_frequent_words(tiny_config_path, tmp_path):
    from spacy_elmo.pretrain.distill import SentenceTargets, build_distillation

    lm, vocab = tiny_lm(tiny_config_path)
    settings = dict(load_config(tiny_config_path)["training"]["distill"])
    settings.update(teacher=str(_word_table(tmp_path)), targets="sentence", sentence_skip_frequent=4)
    targets, _ = build_distillation(lm, settings, "sentences", "cpu", frequent=["<S>", "</S>", "<UNK>", "The", "of"])
    assert isinstance(targets, SentenceTargets) and targets.skip == {"<s>", "</s>", "<unk>", "the"}
