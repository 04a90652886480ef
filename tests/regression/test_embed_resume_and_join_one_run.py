"""Regression: `embed --resume` and `--join` mixed the pieces of different runs.

Nothing but the layer mode was recorded, and that was overwritten: a run
stopped after a chunk, resumed with `--layers top`, finished with rank-3 and
rank-2 arrays in one file ("✔ Wrote"); resumed with another `--weights`, with
vectors of two widths; `--join` of shards embedded with other `--layers` or
models succeeded. Every output now records the run's settings (`run`
attribute, Parquet metadata): layer mode and weights, precision, a
fingerprint of the model, the input files' names and sizes; a resume or join
that differs is refused naming the setting, and the .partial is left as it
was.
"""
import hashlib

import h5py
import numpy
import pytest
import torch

from spacy_elmo.embedding.dump import (
    DumpError,
    embed_file,
    join_shards,
    model_fingerprint,
    partial_path,
    read_record,
    shard_path,
)
from spacy_elmo.io import load_bilm

from ..embedding.inputs_data import SIX_LINES as LINES
from ..embedding.inputs_data import write_text


@pytest.fixture
def text(tmp_path):
    return write_text(tmp_path / "in.txt", LINES)


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def stopped(allennlp_bilm, text, tmp_path, inject):
    """An interrupted run (all layers, float32): its first chunk of 2 units in out.hdf5.partial."""
    out = tmp_path / "out.hdf5"
    inject("embed.chunk:1:enospc")
    with pytest.raises(OSError):
        embed_file(allennlp_bilm, text, out, chunk_lines=2)
    inject("")
    with h5py.File(partial_path(out), "r") as f:
        assert sorted(k for k in f.keys() if k.isdigit()) == ["0", "1"]
    return out


def _other_weights(allennlp_dir):
    """The same architecture (same shapes) with one weight changed: only the fingerprint tells it apart."""
    model = load_bilm(allennlp_dir)
    with torch.no_grad():
        next(model.parameters()).add_(0.5)
    return model


@pytest.mark.parametrize("change,expected", [
    ({"layers": "top"}, "--layers: all in it, top in this run"),
    ({"layers": "weighted", "layer_weights": [0.2, 0.3, 0.5]}, "--layers: all in it, weighted in this run"),
    ({"precision": "bfloat16"}, "--precision: float32 in it, bfloat16 in this run"),
])
def test_resume_with_other_settings_is_refused_and_changes_nothing(allennlp_bilm, text, stopped, change, expected):
    before = _digest(partial_path(stopped))
    with pytest.raises(DumpError, match="--overwrite") as caught:
        embed_file(allennlp_bilm, text, stopped, chunk_lines=2, resume=True, **change)
    assert expected in str(caught.value)
    assert _digest(partial_path(stopped)) == before and not stopped.exists()
    # resumed with its own settings, it completes as one run: every unit (L+1, n, w)
    embed_file(allennlp_bilm, text, stopped, chunk_lines=2, resume=True)
    with h5py.File(stopped, "r") as f:
        assert {f[str(i)].ndim for i in range(len(LINES))} == {3} and f.attrs["layers"] == "all"


def test_resume_with_another_model_or_input_is_refused(allennlp_bilm, allennlp_dir, text, stopped):
    with pytest.raises(DumpError, match=r"model \(--weights\): sha256:"):
        embed_file(_other_weights(allennlp_dir), text, stopped, chunk_lines=2, resume=True)
    text.write_text("\n".join(LINES + ["one more line"]) + "\n", encoding="utf-8")  # the input edited
    with pytest.raises(DumpError, match=r"input files: file 1 is in\.txt \(\d+ bytes\) in it, in\.txt"):
        embed_file(allennlp_bilm, text, stopped, chunk_lines=2, resume=True)


def test_layer_weights_are_recorded_and_checked(allennlp_bilm, text, tmp_path, inject):
    out = tmp_path / "w.hdf5"
    inject("embed.chunk:1:enospc")
    with pytest.raises(OSError):
        embed_file(allennlp_bilm, text, out, chunk_lines=2, layers="weighted", layer_weights=[0.2, 0.3, 0.5])
    inject("")
    with pytest.raises(DumpError, match="--layer-weights: 0.2,0.3,0.5 in it, 1,0,0 in this run"):
        embed_file(allennlp_bilm, text, out, chunk_lines=2, resume=True, layers="weighted", layer_weights=[1, 0, 0])
    embed_file(allennlp_bilm, text, out, chunk_lines=2, resume=True, layers="weighted", layer_weights=[0.2, 0.3, 0.5])
    with h5py.File(out, "r") as f:
        record = read_record(f.attrs)
    assert record["layers"] == "weighted" and record["layer_weights"] == [0.2, 0.3, 0.5]
    assert record["model"] == model_fingerprint(allennlp_bilm) and record["precision"] == "float32"
    assert record["inputs"] == [["in.txt", text.stat().st_size]]


def test_fingerprint_tells_models_apart_and_not_loads(allennlp_bilm, allennlp_dir):
    assert model_fingerprint(load_bilm(allennlp_dir)) == model_fingerprint(allennlp_bilm)
    assert model_fingerprint(_other_weights(allennlp_dir)) != model_fingerprint(allennlp_bilm)


def test_join_refuses_shards_of_other_layers_or_models(allennlp_bilm, allennlp_dir, text, tmp_path):
    out = tmp_path / "j.hdf5"
    embed_file(allennlp_bilm, text, out, shard=(0, 2))
    embed_file(allennlp_bilm, text, out, shard=(1, 2), layers="top")
    with pytest.raises(DumpError, match="--layers: all in j.hdf5.shard-0-of-2, top in j.hdf5.shard-1-of-2"):
        join_shards(out, 2)
    embed_file(_other_weights(allennlp_dir), text, out, shard=(1, 2), overwrite=True)
    with pytest.raises(DumpError, match=r"model \(--weights\)"):
        join_shards(out, 2)
    assert not out.exists() and not partial_path(out).exists()
    embed_file(allennlp_bilm, text, out, shard=(1, 2), overwrite=True)
    join_shards(out, 2)
    with h5py.File(out, "r") as f:
        assert read_record(f.attrs)["model"] == model_fingerprint(allennlp_bilm)
        assert len([k for k in f.keys() if k.isdigit()]) == len(LINES)


def test_join_refuses_shards_of_other_shapes_that_record_nothing(allennlp_bilm, text, tmp_path):
    """Shards of an earlier version record only `layers`: their arrays' shapes are compared too."""
    out = tmp_path / "old.hdf5"
    for k in range(2):
        embed_file(allennlp_bilm, text, out, shard=(k, 2))
        with h5py.File(shard_path(out, k, 2), "a") as f:
            del f.attrs["run"]
    with h5py.File(shard_path(out, 1, 2), "a") as f:  # a shard of a wider model
        for key in [k for k in f.keys() if k.isdigit()]:
            shape = f[key].shape
            del f[key]
            f.create_dataset(key, data=numpy.zeros(shape[:-1] + (64,), dtype=numpy.float32))
    with pytest.raises(DumpError, match="width 64"):
        join_shards(out, 2)
