"""The embed dump: the reference layout, streaming, resume, shards."""
import json

import h5py
import numpy
import pytest

from spacy_elmo.embedding.dump import DumpError, embed_file, join_shards, partial_path, read_dump, shard_path

LINES = ["The cat sat .", "", "A second , longer line of text here", "The cat sat .", "   spaced    out   "]


@pytest.fixture
def input_file(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return path


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


@pytest.mark.parametrize("mode,shape", [("top", (4, 32)), ("average", (4, 32)), ("mix", (4, 32))])
def test_single_layer_modes(allennlp_bilm, input_file, tmp_path, mode, shape):
    mix = [0.2, 0.3, 0.5] if mode == "mix" else None
    out = embed_file(allennlp_bilm, input_file, tmp_path / "o.hdf5", layers=mode, mix=mix)
    full = allennlp_bilm.embed([LINES[0].split()])[0]
    expected = {"top": full[-1], "average": full.mean(0), "mix": numpy.tensordot([0.2, 0.3, 0.5], full, 1)}[mode]
    with h5py.File(out, "r") as f:
        assert f["0"].shape == shape
        numpy.testing.assert_allclose(f["0"][...], expected, atol=1e-5)


def test_mix_needs_one_weight_per_layer(allennlp_bilm, input_file, tmp_path):
    with pytest.raises(DumpError, match="one per layer"):
        embed_file(allennlp_bilm, input_file, tmp_path / "o.hdf5", layers="mix", mix=[1.0])


def test_existing_output_and_partial_runs(allennlp_bilm, input_file, tmp_path):
    out = tmp_path / "o.hdf5"
    embed_file(allennlp_bilm, input_file, out)
    with pytest.raises(DumpError, match="--overwrite"):
        embed_file(allennlp_bilm, input_file, out)
    embed_file(allennlp_bilm, input_file, out, overwrite=True)
    # an interrupted run: a .partial file holding some lines, marked incomplete
    out2 = tmp_path / "o2.hdf5"
    with h5py.File(partial_path(out2), "w") as f:
        f.attrs["status"] = "incomplete"
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
    import sys

    single = embed_file(__import__("spacy_elmo").load_bilm(allennlp_dir), input_file, tmp_path / "single.hdf5")
    out = tmp_path / "tr.hdf5"
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29519",
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
