"""Regression: malformed fields in a model's files crashed with a traceback instead of a `WeightsError`.

A string where options.json wants a number (`n_characters`, a filter width),
a non-UTF-8 options.json or vocab.txt, a duplicate vocabulary word, a
`cell_clip` of "x" (which loaded and then failed inside the LSTM) or -1 (which
loaded and computed nonsense), an elmo.json whose softmax entry lacks a key,
an ELMoForManyLangs architecture that is a list, a `char.dic` id such as "²"
(which `str.isdigit` accepts): each is now one clear error naming the file,
and `convert` reports it in one line. A model saved with float16 storage whose
weights overflow float16 was written (and then failed to load); the save now
refuses before writing anything."""
import json
import shutil

import numpy

import pytest
import torch

from spacy_elmo.cli import app
from spacy_elmo.io import WeightsError, export_published, load_model, save_native

from ..cli.invoke import runner
from ..io.manylangs_model import write_manylangs_model
from ..io.model_server import tiny_bilm


@pytest.fixture
def published(tmp_path):
    directory = tmp_path / "published"
    export_published(tiny_bilm(0), directory)
    return directory


def _edit_options(directory, edit):
    options = json.loads((directory / "options.json").read_text())
    edit(options)
    (directory / "options.json").write_text(json.dumps(options))


@pytest.mark.parametrize("edit,message", [
    (lambda o: o["char_cnn"].update(n_characters="abc"), "n_characters must be an integer"),
    (lambda o: o["char_cnn"].update(n_characters=None), "n_characters must be an integer"),
    (lambda o: o["char_cnn"].update(filters=[["a", 4]]), "filters must be .* pairs of integers"),
    (lambda o: o["char_cnn"].update(filters=[[1.5, 4]]), "filters must be .* pairs of integers"),
    (lambda o: o["lstm"].update(cell_clip="x"), "cell_clip must be a number >= 0 or null"),
    (lambda o: o["lstm"].update(proj_clip=-1.0), "proj_clip must be a number >= 0 or null"),
    (lambda o: o["char_cnn"].update(n_highway=float("inf")), "'n_highway' must be an integer"),
    (lambda o: o["lstm"].update(use_skip_connections="yes"), "use_skip_connections must be true or false"),
])
def test_a_malformed_options_field_is_one_error(published, edit, message):
    _edit_options(published, edit)
    with pytest.raises(WeightsError, match=message):
        load_model(published)


def test_a_malformed_options_field_is_one_line_from_convert(published, tmp_path):
    _edit_options(published, lambda o: o["char_cnn"].update(n_characters="abc"))
    result = runner.invoke(app, ["convert", str(published), str(tmp_path / "out")])
    assert result.exit_code == 1 and "n_characters must be an integer" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "out").exists()


def test_non_utf8_options_and_vocabulary(published, tmp_path):
    options = published / "options.json"
    options.write_bytes(b"\xff\xfe" + options.read_bytes())
    with pytest.raises(WeightsError, match="options.json: not a UTF-8 text file"):
        load_model(published)


@pytest.mark.parametrize("vocab,message", [
    (b"<S>\n</S>\n<UNK>\n\xff\xfeword\n", "vocab.txt: not a usable vocabulary .*utf-8"),
    (b"<S>\n</S>\n<UNK>\nword\nword\n", "vocab.txt: not a usable vocabulary"),
])
def test_a_bad_word_vocabulary_is_one_error(tmp_path, vocab, message):
    from spacy_elmo.bilm import BiLM, BiLMConfig, Vocabulary

    config = BiLMConfig(lstm_dim=8, projection_dim=4, n_layers=1, use_character_inputs=False, n_tokens_vocab=4)
    bilm = BiLM(config, vocab=Vocabulary(["<S>", "</S>", "<UNK>", "word"]))
    bilm.reset_parameters(0)
    directory = tmp_path / "words"
    export_published(bilm, directory)
    load_model(directory)  # loads as written
    (directory / "vocab.txt").write_bytes(vocab)
    with pytest.raises(WeightsError, match=message):
        load_model(directory)


@pytest.mark.parametrize("edit,message", [
    (lambda m: m.update(softmax={"dim": 4}), "the softmax entry lacks 'n_vocab'"),
    (lambda m: m.update(softmax={"n_vocab": 4, "dim": 4, "kind": "weird"}), "invalid softmax entry"),
    (lambda m: m.update(sha256=["a"]), "'sha256' and 'softmax' must be objects"),
    (lambda m: m["bilm"].update(cell_clip="x"), "elmo.json: .*cell_clip must be a number >= 0 or null"),
    (lambda m: m["bilm"].update(n_highway=float("nan")), "elmo.json: .*n_highway must be an integer"),
])
def test_a_malformed_native_metadata_field_is_one_error(tmp_path, edit, message):
    from spacy_elmo.bilm import Vocabulary

    directory = tmp_path / "native"
    save_native(directory, tiny_bilm(0), vocab=Vocabulary(["<S>", "</S>", "<UNK>", "a"]))
    meta = json.loads((directory / "elmo.json").read_text())
    meta["vocab"] = True
    edit(meta)
    (directory / "elmo.json").write_text(json.dumps(meta))
    with pytest.raises(WeightsError, match=message):
        load_model(directory)


@pytest.mark.parametrize("edit,message", [
    (lambda arch: [arch], "expected a JSON object"),
    (lambda arch: {**arch, "token_embedder": []}, "'token_embedder' must be an object"),
    (lambda arch: {**arch, "token_embedder": {**arch["token_embedder"], "word_dim": "x"}}, "'word_dim' must be"),
])
def test_a_malformed_manylangs_architecture_is_one_error(tmp_path, edit, message):
    directory = write_manylangs_model(tmp_path / "zh")
    arch_file = directory / "cnn_tiny.json"
    arch_file.write_text(json.dumps(edit(json.loads(arch_file.read_text()))))
    with pytest.raises(WeightsError, match=message):
        load_model(directory)


@pytest.mark.parametrize("line,message", [
    ("x\t\u00b2\n", "expected 'entry<TAB>id'"),
    ("x\t99999999999\n", "ids run to"),
])
def test_a_malformed_char_dictionary_id_is_one_error(tmp_path, line, message):
    directory = write_manylangs_model(tmp_path / "zh")
    with open(directory / "char.dic", "a", encoding="utf-8") as handle:
        handle.write(line)
    with pytest.raises(WeightsError, match=message):
        load_model(directory)


def test_float16_storage_refuses_weights_beyond_its_range(tmp_path):
    bilm = tiny_bilm(0)
    with torch.no_grad():
        next(bilm.lstm.parameters()).view(-1)[0] = 1e6
    target = tmp_path / "half"
    with pytest.raises(ValueError, match="beyond torch.float16's range"):
        save_native(target, bilm, storage_dtype="float16")
    assert not target.exists()
    save_native(target, bilm)  # float32 holds it
    shutil.rmtree(target)


def test_values_that_loaded_before_still_load(tmp_path):
    """A clip of 0 (no clipping, as the engines read it) and numpy scalars are accepted, as before."""
    from spacy_elmo.bilm import BiLM, BiLMConfig

    config = BiLMConfig(lstm_dim=numpy.int64(8), projection_dim=4, n_layers=1, cell_clip=0.0,
                        filters=numpy.array([[1, 4], [2, 4]]), n_highway=1, char_embedding_dim=4,
                        dropout=numpy.float32(0.0), use_skip_connections=numpy.bool_(True))
    assert config.lstm_dim == 8 and config.filters == ((1, 4), (2, 4)) and config.cell_clip == 0.0
    bilm = BiLM(config)
    bilm.reset_parameters(0)
    save_native(tmp_path / "clip0", bilm)
    assert load_model(tmp_path / "clip0").bilm.config.cell_clip == 0.0
