"""Regression: saves that fail partway, and model files edited or cut by hand.

- A full disk while safetensors wrote raised its `SafetensorError`, which is no OSError: `convert`
  and `pretrain` showed a traceback, naming no file.
- A native save over an older model wrote one file at a time: failing at the second file left the new
  weights beside the old elmo.json, so neither model loaded (the trainer saves `model-best` over
  itself at every new best). A published export deleted the old options.json first.
- A published options.json without `char_cnn.activation` loaded as tanh (bilm-tf and AllenNLP read
  it without a default; every published model is relu); an elmo.json missing a `bilm` setting loaded
  its default. Both moved the vectors without a word.
- `pretrain` into an output it cannot write showed a traceback; a checkpoint that a full disk cut
  short said "unexpected pos 668928 vs 668816"; an elmo.json without a usable `format_version` was
  told to upgrade spacy-elmo.
"""
import errno
import json
import shutil

import numpy
import pytest
import safetensors.torch
import torch
from safetensors import SafetensorError
from typer.testing import CliRunner

from spacy_elmo.bilm import BiLM, BiLMConfig, Vocabulary
from spacy_elmo.bilm.language_model import SoftmaxHead
from spacy_elmo.bilm.vocab import Vocabulary as VocabularyClass
from spacy_elmo.cli import app
from spacy_elmo.io import WeightsError, load_bilm, load_model, save_native
from spacy_elmo.io.published import export_published
from spacy_elmo.pretrain import checkpoint
from spacy_elmo.pretrain.checkpoint import CheckpointError, save_checkpoint

FULL = "Error while serializing: I/O error: No space left on device (os error 28)"


def _model(seed: int) -> BiLM:
    config = BiLMConfig(lstm_dim=8, projection_dim=4, n_layers=2, filters=((1, 4), (2, 4)), n_highway=1,
                        char_embedding_dim=4)
    model = BiLM(config)
    model.reset_parameters(seed)
    return model


def _head(seed: int) -> SoftmaxHead:
    head = SoftmaxHead(4, 4, "sampled", n_samples=2)
    head.reset_parameters(torch.Generator().manual_seed(seed))
    return head


VOCAB = Vocabulary(["<S>", "</S>", "<UNK>", "hello"])


def _full_disk_at_call(monkeypatch, n: int) -> None:
    """safetensors' writes fail from the n-th on (counting from 1), as a full disk fails them."""
    save_file, calls = safetensors.torch.save_file, []

    def failing(state, path, *args, **kwargs):
        calls.append(path)
        if len(calls) >= n:
            raise SafetensorError(FULL)
        return save_file(state, path, *args, **kwargs)

    monkeypatch.setattr(safetensors.torch, "save_file", failing)


def test_a_full_disk_in_safetensors_is_an_oserror_naming_the_file(tmp_path, monkeypatch):
    _full_disk_at_call(monkeypatch, 1)
    with pytest.raises(OSError) as caught:
        save_native(tmp_path / "m", _model(0))
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(tmp_path / "m" / "bilm.safetensors")
    assert not [p.name for p in (tmp_path / "m").iterdir()]  # nothing half-written, no temporary file


def test_convert_onto_a_full_disk_is_one_line(tmp_path, monkeypatch):
    save_native(tmp_path / "source", _model(0), VOCAB, _head(0))
    _full_disk_at_call(monkeypatch, 1)
    result = CliRunner().invoke(app, ["convert", str(tmp_path / "source"), str(tmp_path / "out")])
    assert result.exit_code == 1, result.output
    said = " ".join(result.output.split())
    assert "cannot write (No space left on device)" in said and "Traceback" not in said


@pytest.mark.parametrize("failing_write", [1, 2])  # the weights, the softmax (after the vocabulary)
def test_a_save_over_a_model_that_fails_partway_leaves_the_old_model_whole(tmp_path, monkeypatch, failing_write):
    directory = tmp_path / "model-best"
    save_native(directory, _model(0), VOCAB, _head(0))
    before = load_bilm(directory).embed([["hello", "there"]])[0]
    _full_disk_at_call(monkeypatch, failing_write)
    with pytest.raises(OSError):
        save_native(directory, _model(1), VOCAB, _head(1))
    loaded = load_model(directory)
    numpy.testing.assert_array_equal(loaded.bilm.embed([["hello", "there"]])[0], before)
    assert loaded.head is not None
    assert sorted(p.name for p in directory.iterdir()) == [
        "bilm.safetensors", "elmo.json", "softmax.safetensors", "vocab.txt"
    ]


def test_a_save_without_a_softmax_that_fails_keeps_the_old_softmax(tmp_path, monkeypatch):
    """The softmax a new model does not have is removed only with the rest committed."""
    directory = tmp_path / "m"
    save_native(directory, _model(0), VOCAB, _head(0))
    monkeypatch.setattr(VocabularyClass, "to_file", lambda self, path: (_ for _ in ()).throw(OSError(28, "full")))
    with pytest.raises(OSError):
        save_native(directory, _model(1), VOCAB)
    assert load_model(directory).head is not None


def test_a_successful_save_over_a_model_replaces_it(tmp_path):
    directory = tmp_path / "m"
    save_native(directory, _model(0), VOCAB, _head(0))
    save_native(directory, _model(1))
    numpy.testing.assert_array_equal(load_bilm(directory).embed([["a"]])[0], _model(1).embed([["a"]])[0])
    assert sorted(p.name for p in directory.iterdir()) == ["bilm.safetensors", "elmo.json", "vocab.txt"]
    assert load_model(directory).head is None


def test_an_export_over_an_export_that_fails_partway_leaves_the_old_one(tmp_path, allennlp_dir, monkeypatch):
    import h5py

    old = load_bilm(allennlp_dir)
    export_published(old, tmp_path / "pub")
    before = load_bilm(tmp_path / "pub").embed([["hello"]])[0]
    monkeypatch.setattr(h5py.File, "create_dataset", lambda *a, **k: (_ for _ in ()).throw(OSError(28, "full")))
    with pytest.raises(OSError):
        export_published(_model(1), tmp_path / "pub")
    numpy.testing.assert_array_equal(load_bilm(tmp_path / "pub").embed([["hello"]])[0], before)


def test_published_options_without_an_activation_are_refused(tmp_path, allennlp_dir):
    shutil.copytree(allennlp_dir, tmp_path / "m")
    options = json.loads((tmp_path / "m" / "options.json").read_text())
    del options["char_cnn"]["activation"]
    (tmp_path / "m" / "options.json").write_text(json.dumps(options))
    with pytest.raises(WeightsError, match=r"activation"):
        load_bilm(tmp_path / "m")


@pytest.mark.parametrize("setting", ["activation", "cell_clip", "proj_clip", "use_skip_connections", "filters"])
def test_an_elmo_json_missing_a_setting_is_refused(tmp_path, setting):
    save_native(tmp_path, _model(0))
    meta = json.loads((tmp_path / "elmo.json").read_text())
    del meta["bilm"][setting]
    (tmp_path / "elmo.json").write_text(json.dumps(meta))
    with pytest.raises(WeightsError, match=rf"missing biLM setting\(s\) \['{setting}'\]"):
        load_bilm(tmp_path)


def test_an_elmo_json_from_before_the_word_table_still_loads(tmp_path):
    model = _model(0)
    save_native(tmp_path, model)
    meta = json.loads((tmp_path / "elmo.json").read_text())
    for added in ("characters", "word_table_rows", "word_table_dim", "word_table_specials", "word_table_trainable"):
        del meta["bilm"][added]
    (tmp_path / "elmo.json").write_text(json.dumps(meta))
    numpy.testing.assert_array_equal(load_bilm(tmp_path).embed([["a"]])[0], model.embed([["a"]])[0])


@pytest.mark.parametrize("version", [None, "1", 1.0, True, 0])
def test_an_unusable_format_version_is_not_told_to_upgrade(tmp_path, version):
    save_native(tmp_path, _model(0))
    meta = json.loads((tmp_path / "elmo.json").read_text())
    if version is None:
        del meta["format_version"]
    else:
        meta["format_version"] = version
    (tmp_path / "elmo.json").write_text(json.dumps(meta))
    with pytest.raises(WeightsError, match="is not a format version") as caught:
        load_bilm(tmp_path)
    assert "upgrade" not in str(caught.value)


def test_pretrain_into_an_output_it_cannot_write_is_one_line(tmp_path, tiny_config_path, monkeypatch):
    import spacy_elmo.pretrain

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "out" / "model-best" / "elmo.json"))

    monkeypatch.setattr(spacy_elmo.pretrain, "pretrain", full)
    result = CliRunner().invoke(app, ["pretrain", str(tiny_config_path), str(tmp_path / "out")])
    assert result.exit_code == 1, result.output
    said = " ".join(result.output.split())
    assert "model-best/elmo.json: cannot write (No space left on device)" in said
    assert "--resume" in said and "Traceback" not in said


def test_a_checkpoint_a_full_disk_cut_short_says_how_much_room_is_left(tmp_path, monkeypatch):
    def cut_short(*args, **kwargs):
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 668928 vs 668816")

    monkeypatch.setattr(torch, "save", cut_short)
    monkeypatch.setattr(checkpoint, "_problem", lambda state: "")  # a checkpoint's layout is not the point
    with pytest.raises(CheckpointError, match=r"unexpected pos .*; [\d,.]+ MB free on its disk\); no earlier"):
        save_checkpoint(tmp_path / "checkpoint.pt", {"step": 1})


def test_pretrain_names_a_read_error_as_such(tmp_path, tiny_config_path, monkeypatch):
    """A second look: every OSError was worded "cannot write ... --resume", a read error too."""
    import spacy_elmo.pretrain

    def unreadable(*args, **kwargs):
        raise OSError(errno.EIO, "Input/output error", str(tmp_path / "corpus.txt"))

    monkeypatch.setattr(spacy_elmo.pretrain, "pretrain", unreadable)
    result = CliRunner().invoke(app, ["pretrain", str(tiny_config_path), str(tmp_path / "out")])
    said = " ".join(result.output.split())
    assert result.exit_code == 1 and "corpus.txt: Input/output error" in said and "cannot write" not in said
