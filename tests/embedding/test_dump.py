"""The embed dump: the reference layout, streaming, resume, shards."""
import json
import warnings

import h5py
import numpy
import pytest

from spacy_elmo.embedding import dump
from spacy_elmo.embedding.dump import (
    DumpError,
    combine_layers,
    embed_file,
    join_shards,
    partial_path,
    read_dump,
    recorded_layer_mode,
    shard_path,
)

from .inputs_data import TEXT_LINES as LINES
from .inputs_data import write_text
from tests.conftest import torchrun_command


@pytest.fixture
def input_file(tmp_path):
    return write_text(tmp_path / "in.txt", LINES)


def test_layout_matches_reference(allennlp_bilm, input_file, tmp_path):
    out = embed_file(allennlp_bilm, input_file, tmp_path / "out.hdf5", chunk_lines=2)
    with h5py.File(out, "r") as f:
        assert sorted(k for k in f.keys() if k.isdigit()) == ["0", "1", "2", "3", "4"]
        for i, line in enumerate(LINES):
            tokens = line.split()
            assert f[str(i)].shape == (3, len(tokens), 32) and f[str(i)].dtype == numpy.float32
            if tokens:
                numpy.testing.assert_allclose(f[str(i)][...], allennlp_bilm.embed([tokens])[0], atol=1e-5)
        mapping = json.loads(f["sentence_to_index"][0])
        assert f.attrs["status"] == "complete"
    # repeated lines map to the last occurrence, as in the reference
    assert mapping["The cat sat ."] == "3" and mapping[""] == "1"


@pytest.mark.parametrize("mode,shape", [("top", (4, 32)), ("average", (4, 32)), ("weighted", (4, 32))])
def test_single_layer_modes(allennlp_bilm, input_file, tmp_path, mode, shape):
    weights = [0.2, 0.3, 0.5] if mode == "weighted" else None
    out = embed_file(allennlp_bilm, input_file, tmp_path / "o.hdf5", layers=mode, layer_weights=weights)
    full = allennlp_bilm.embed([LINES[0].split()])[0]
    expected = {"top": full[-1], "average": full.mean(0),
                "weighted": numpy.tensordot([0.2, 0.3, 0.5], full, 1)}[mode]
    with h5py.File(out, "r") as f:
        assert f["0"].shape == shape and f.attrs["layers"] == mode
        numpy.testing.assert_allclose(f["0"][...], expected, atol=1e-5)


@pytest.mark.parametrize("weights", [None, [1.0], [0.2, 0.3, 0.5, 0.0]])
def test_weighted_needs_one_weight_per_layer_and_says_layer_weights(allennlp_bilm, input_file, tmp_path, weights):
    with pytest.raises(DumpError, match="one per layer") as caught:
        embed_file(allennlp_bilm, input_file, tmp_path / "o.hdf5", layers="weighted", layer_weights=weights)
    assert "--layer-weights" in str(caught.value) and "mix" not in str(caught.value)
    assert not (tmp_path / "o.hdf5").exists() and not partial_path(tmp_path / "o.hdf5").exists()


@pytest.fixture
def old_spelling_unwarned(monkeypatch):
    """The deprecation warning not yet given in this process, and every warning recorded."""
    monkeypatch.setattr(dump, "_WARNED", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


def test_weighted_equals_the_old_mix_spelling_bit_for_bit(allennlp_bilm, input_file, tmp_path,
                                                          old_spelling_unwarned):
    weights = [0.2, 0.3, 0.5]
    new = embed_file(allennlp_bilm, input_file, tmp_path / "new.hdf5", layers="weighted", layer_weights=weights)
    assert not old_spelling_unwarned  # the new spelling never warns
    old = embed_file(allennlp_bilm, input_file, tmp_path / "old.hdf5", layers="mix", mix=weights)
    with h5py.File(new, "r") as a, h5py.File(old, "r") as b:
        keys = [k for k in a.keys() if k.isdigit()]
        assert keys == [k for k in b.keys() if k.isdigit()] and len(keys) == len(LINES)
        for key in keys:
            assert a[key].dtype == b[key].dtype == numpy.float32
            assert a[key][...].tobytes() == b[key][...].tobytes()
        # a file written with the old spelling records the new name
        assert a.attrs["layers"] == b.attrs["layers"] == "weighted"
    full = allennlp_bilm.embed([LINES[2].split()])[0]
    assert (combine_layers(full, "weighted", weights).tobytes()
            == combine_layers(full, "mix", mix=weights).tobytes()
            == combine_layers(full, "mix", weights).tobytes())


def test_the_old_spelling_warns_once(allennlp_bilm, input_file, tmp_path, old_spelling_unwarned):
    full = allennlp_bilm.embed([LINES[0].split()])[0]
    embed_file(allennlp_bilm, input_file, tmp_path / "a.hdf5", layers="mix", mix=[0.2, 0.3, 0.5])
    embed_file(allennlp_bilm, input_file, tmp_path / "b.hdf5", layers="mix", layer_weights=[0.2, 0.3, 0.5])
    embed_file(allennlp_bilm, input_file, tmp_path / "c.hdf5", layers="weighted", mix=[0.2, 0.3, 0.5])
    combine_layers(full, "mix", mix=[0.2, 0.3, 0.5])
    future = [w for w in old_spelling_unwarned if issubclass(w.category, FutureWarning)]
    assert len(future) == 1 and len(old_spelling_unwarned) == 1
    text = str(future[0].message)
    assert 'layers="weighted"' in text and "layer_weights=" in text and "--layer-weights" in text
    assert "removed" in text
    assert future[0].filename == __file__  # points at the caller, not at the package


def test_mix_and_layer_weights_together_are_refused(allennlp_bilm, input_file, tmp_path, old_spelling_unwarned):
    with pytest.raises(DumpError, match="layer_weights") as caught:
        embed_file(allennlp_bilm, input_file, tmp_path / "o.hdf5", layers="weighted", mix=[0.2, 0.3, 0.5],
                   layer_weights=[0.2, 0.3, 0.5])
    assert "--layer-weights" in str(caught.value)
    with pytest.raises(DumpError, match="--layer-weights"):
        embed_file(allennlp_bilm, input_file, tmp_path / "o.hdf5", layers="mix", mix=[1.0])
    with pytest.raises(DumpError, match="'weighted'"):
        embed_file(allennlp_bilm, input_file, tmp_path / "o.hdf5", layers="bogus")


def test_files_recording_the_old_mix_name_stay_readable(allennlp_bilm, input_file, tmp_path):
    assert recorded_layer_mode("mix") == recorded_layer_mode(b"mix") == "weighted"
    assert recorded_layer_mode("weighted") == "weighted" and recorded_layer_mode(b"top") == "top"
    assert recorded_layer_mode(None) == "all"
    weights = [0.2, 0.3, 0.5]
    out = tmp_path / "o.hdf5"
    for k in range(2):
        embed_file(allennlp_bilm, input_file, out, layers="weighted", layer_weights=weights, shard=(k, 2))
        with h5py.File(shard_path(out, k, 2), "a") as f:
            f.attrs["layers"] = "mix"  # as a file of an earlier version says
    # an old shard reads as before, and its mode in the current spelling
    index, f = read_dump(shard_path(out, 0, 2))
    with f:
        assert recorded_layer_mode(f.attrs["layers"]) == "weighted" and f["0"].shape == (4, 32)
    # joined into a new file, which records the new name
    join_shards(out, 2)
    with h5py.File(out, "r") as f:
        assert f.attrs["layers"] == "weighted" and f["2"].shape == (8, 32)
    # an interrupted run of an earlier version, resumed: the finished file records the new name
    resumed = tmp_path / "resumed.hdf5"
    with h5py.File(partial_path(resumed), "w") as f:
        f.attrs["status"] = "incomplete"
        f.attrs["layers"] = "mix"
    embed_file(allennlp_bilm, input_file, resumed, layers="weighted", layer_weights=weights, resume=True)
    with h5py.File(resumed, "r") as f:
        assert f.attrs["layers"] == "weighted"


def test_existing_output_and_partial_runs(allennlp_bilm, input_file, tmp_path):
    out = tmp_path / "o.hdf5"
    embed_file(allennlp_bilm, input_file, out)
    with pytest.raises(DumpError, match="--overwrite"):
        embed_file(allennlp_bilm, input_file, out)
    embed_file(allennlp_bilm, input_file, out, overwrite=True)
    # an interrupted run: a .partial file holding some lines, marked incomplete
    out2 = tmp_path / "o2.hdf5"
    with h5py.File(out, "r") as done:
        record = done.attrs["run"]  # this run's settings: the interrupted run was made with them
    with h5py.File(partial_path(out2), "w") as f:
        f.attrs["status"] = "incomplete"
        f.attrs["run"] = record
        f.create_dataset("0", data=numpy.full((3, 4, 32), 7.0, dtype="float32"))
    with pytest.raises(DumpError, match="--resume"):
        embed_file(allennlp_bilm, input_file, out2)
    embed_file(allennlp_bilm, input_file, out2, resume=True)
    with h5py.File(out2, "r") as f:
        assert (f["0"][...] == 7.0).all()  # kept, not recomputed
        assert f["2"].shape == (3, 8, 32) and f.attrs["status"] == "complete"
    assert not partial_path(out2).exists()


def test_torn_partial_file_restarts(allennlp_bilm, input_file, tmp_path):
    out = tmp_path / "o.hdf5"
    partial_path(out).write_bytes(b"\x89HDF garbage")
    embed_file(allennlp_bilm, input_file, out, resume=True)
    mapping, f = read_dump(out)
    with f:
        assert len([k for k in f.keys() if k.isdigit()]) == 5


def test_shards_join_to_the_same_keys(allennlp_bilm, input_file, tmp_path):
    single = embed_file(allennlp_bilm, input_file, tmp_path / "single.hdf5")
    out = tmp_path / "sharded.hdf5"
    for k in range(2):
        path = embed_file(allennlp_bilm, input_file, out, shard=(k, 2))
        assert path == shard_path(out, k, 2)
    with pytest.raises(DumpError, match="missing"):
        join_shards(out, 3)
    join_shards(out, 2, input_file)
    with h5py.File(single, "r") as a, h5py.File(out, "r") as b:
        assert sorted(a.keys()) == sorted(b.keys())
        for key in a.keys():
            if key.isdigit():
                numpy.testing.assert_allclose(a[key][...], b[key][...], atol=1e-5)
        assert json.loads(a["sentence_to_index"][0]) == json.loads(b["sentence_to_index"][0])


def test_torchrun_shards_and_joins(allennlp_dir, input_file, tmp_path):
    import os
    import subprocess

    single = embed_file(__import__("spacy_elmo").load_bilm(allennlp_dir), input_file, tmp_path / "single.hdf5")
    out = tmp_path / "tr.hdf5"
    result = subprocess.run(
        [*torchrun_command(2),
         "-m", "spacy_elmo", "embed", str(input_file), str(out), "--weights", str(allennlp_dir), "--quiet"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert shard_path(out, 0, 2).exists() and shard_path(out, 1, 2).exists()
    with h5py.File(single, "r") as a, h5py.File(out, "r") as b:
        assert sorted(a.keys()) == sorted(b.keys())
        for key in a.keys():
            if key.isdigit():
                numpy.testing.assert_allclose(a[key][...], b[key][...], atol=1e-5)


def test_dataset_writer_reuses_types_and_spaces_faithfully(tmp_path):
    """The writer keeps one type per dtype and one dataspace per shape: every
    dataset must still come out as h5py's `create_dataset` writes it."""
    from spacy_elmo.embedding.dump import _DatasetWriter

    rng = numpy.random.default_rng(0)
    arrays = [rng.standard_normal(shape).astype(dtype)
              for shape in [(3, 4, 8), (3, 0, 8), (3, 4, 8), (4, 8), (3, 7, 8)]
              for dtype in (numpy.float32, numpy.float16)]
    arrays.append(numpy.asfortranarray(rng.standard_normal((3, 5, 8)).astype(numpy.float32)))
    with h5py.File(tmp_path / "ours.hdf5", "w") as ours, h5py.File(tmp_path / "theirs.hdf5", "w") as theirs:
        writer = _DatasetWriter(ours)
        writer.MAX_SPACES = 2  # also exercise the forgetting of kept dataspaces
        for i, array in enumerate(arrays):
            writer.write(str(i), array)
            theirs.create_dataset(str(i), data=array)
    with h5py.File(tmp_path / "ours.hdf5", "r") as ours, h5py.File(tmp_path / "theirs.hdf5", "r") as theirs:
        assert sorted(ours.keys()) == sorted(theirs.keys())
        for key in theirs:
            assert ours[key].shape == theirs[key].shape and ours[key].dtype == theirs[key].dtype
            numpy.testing.assert_array_equal(ours[key][...], theirs[key][...])
