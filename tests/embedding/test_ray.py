"""`embed --engine ray` and `embed_dataset` on a local Ray instance with two workers.

One module-scoped Ray instance (2 CPUs), shut down at the end. Every check
compares with the local engine bit for bit: a sentence's vectors do not
depend on its batch, so the engine cannot change them.
"""
import hashlib
import json

import h5py
import numpy
import pytest
from typer.testing import CliRunner

from spacy_elmo.cli import app

from .inputs_data import EXPECTED

ray = pytest.importorskip("ray", reason='needs Ray Data: pip install "spacy-elmo[ray]"')
pytest.importorskip("ray.data", reason='needs Ray Data: pip install "spacy-elmo[ray]"')

runner = CliRunner()


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def embed(*args):
    result = runner.invoke(app, ["embed", *[str(a) for a in args], "-q"])
    assert result.exit_code == 0, result.output
    return result


def datasets(path):
    with h5py.File(path, "r") as f:
        arrays = {key: f[key][...] for key in f.keys() if key != "sentence_to_index"}
        mapping = json.loads(f["sentence_to_index"][0]) if "sentence_to_index" in f else None
        return arrays, mapping, dict(f.attrs)


def test_ray_dump_equals_the_local_dump_bit_for_bit(local_ray, allennlp_dir, inputs_dir, tmp_path):
    """Every input format at once (a glob of .conllu, .jsonl with tokens and text, .spacy, text),
    blocks of 2 units spread over 2 workers."""
    pattern = inputs_dir / "*"
    embed(pattern, tmp_path / "local.hdf5", "-w", allennlp_dir, "--lang", "en")
    embed(pattern, tmp_path / "ray.hdf5", "-w", allennlp_dir, "--lang", "en", "--engine", "ray", "--workers", 2,
          "--chunk-lines", 2)
    (local, local_map, local_attrs), (remote, remote_map, remote_attrs) = (
        datasets(tmp_path / "local.hdf5"), datasets(tmp_path / "ray.hdf5"))
    n_units = sum(len(units) for units in EXPECTED.values())
    assert len(local) == n_units and sorted(remote) == sorted(local)
    for key, array in local.items():
        assert remote[key].dtype == array.dtype and numpy.array_equal(remote[key], array), key
    assert remote_map == local_map and remote_attrs == local_attrs
    assert not (tmp_path / "ray.hdf5.partial").exists()


def test_ray_parquet_rows_equal_the_dump_and_resume_skips_a_finished_part(local_ray, allennlp_dir, inputs_dir,
                                                                          tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    from spacy_elmo.embedding.parquet import column_arrays, part_name

    pattern = inputs_dir / "*"
    embed(pattern, tmp_path / "local.hdf5", "-w", allennlp_dir, "--lang", "en")
    dump = datasets(tmp_path / "local.hdf5")[0]
    out = tmp_path / "parquet"
    out.mkdir()
    # a finished part (in.txt's lines 2-3) with sentinel content: a rerun must leave it alone
    sentinel = out / part_name(3, 1)
    sentinel.write_bytes(b"sentinel: finished before")
    embed(pattern, out, "-w", allennlp_dir, "--lang", "en", "--engine", "ray", "--workers", 2, "--format", "parquet",
          "--chunk-lines", 2, "--resume")
    assert sentinel.read_bytes() == b"sentinel: finished before"
    rows = {}
    for part in sorted(out.glob("part-*.parquet")):
        if part != sentinel:  # not Parquet
            table = pq.read_table(part)
            rows.update(zip(table.column("key").to_pylist(), column_arrays(table.column("elmo"))))
    assert sorted(rows) == sorted(k for k in dump if k not in ("3:2", "3:3"))
    for key, array in rows.items():
        assert numpy.array_equal(array, dump[key]), key
    table = pq.read_table(out / part_name(1, 1)).to_pydict()  # in.jsonl, lines 2-3
    assert table["key"] == ["1:2", "1:3"] and table["tokens"] == [["Hello", "there", ",", "world", "."], []]
    assert table["text"] == ["Hello there, world.", "an empty unit"]


def test_ray_hdf5_resume_keeps_what_is_written(local_ray, allennlp_dir, inputs_dir, tmp_path):
    from spacy_elmo.embedding.dump import partial_path

    text = inputs_dir / "in.txt"
    embed(text, tmp_path / "local.hdf5", "-w", allennlp_dir)
    out = tmp_path / "ray.hdf5"
    with h5py.File(tmp_path / "local.hdf5", "r") as f:
        record = f.attrs["run"]  # the settings of this run, which the interrupted one was made with
    with h5py.File(partial_path(out), "w") as f:  # an interrupted run that wrote line 0
        f.attrs["status"] = "incomplete"
        f.attrs["run"] = record
        f.create_dataset("0", data=numpy.full((3, 4, 32), 7.0, dtype="float32"))
    digest = hashlib.sha256(partial_path(out).read_bytes()).hexdigest()
    result = runner.invoke(app, ["embed", str(text), str(out), "-w", str(allennlp_dir), "-q", "--engine", "ray"])
    assert result.exit_code == 1 and "--resume" in result.output
    assert hashlib.sha256(partial_path(out).read_bytes()).hexdigest() == digest
    embed(text, out, "-w", allennlp_dir, "--engine", "ray", "--workers", 2, "--chunk-lines", 2, "--resume")
    local, local_map, _ = datasets(tmp_path / "local.hdf5")
    resumed, resumed_map, attrs = datasets(out)
    assert (resumed["0"] == 7.0).all()  # kept, not recomputed
    assert all(numpy.array_equal(resumed[k], local[k]) for k in local if k != "0")
    assert resumed_map == local_map and attrs["status"] == "complete"


def test_workers_read_the_old_mix_spelling_as_weighted(allennlp_dir, allennlp_bilm, monkeypatch):
    """No Ray instance: the settings a worker gets, and what it computes from them."""
    import pyarrow

    from spacy_elmo.embedding import dump
    from spacy_elmo.embedding.ray import BiLMWorker, EmbedSettings

    monkeypatch.setattr(dump, "_WARNED", set())
    weights = [0.2, 0.3, 0.5]
    new = EmbedSettings(str(allennlp_dir), "weighted", weights)
    with pytest.warns(FutureWarning, match="layer_weights="):
        old = EmbedSettings(str(allennlp_dir), "mix", mix=weights)
    assert (old.layers, old.layer_weights, old.mix) == ("weighted", weights, None)
    sentences = [["The", "cat", "sat", "."], []]
    batch = pyarrow.table({"tokens": pyarrow.array(sentences, type=pyarrow.list_(pyarrow.string()))})
    a, b = (BiLMWorker(settings)(batch).column("elmo").chunk(0).to_numpy() for settings in (new, old))
    assert [x.tobytes() for x in a] == [x.tobytes() for x in b]
    expected = dump.combine_layers(allennlp_bilm.embed([sentences[0]])[0], "weighted", weights)
    assert numpy.array_equal(a[0], expected) and a[1].shape == (0, 32)


def test_embed_dataset_adds_the_vectors_to_a_ray_dataset(local_ray, allennlp_dir, allennlp_bilm):
    from spacy_elmo.embedding.ray import embed_dataset

    sentences = [["The", "cat", "sat", "."], [], ["A", "longer", "sentence", "with", "more", "words"]] * 3
    ds = ray.data.from_items([{"id": i, "tokens": tokens} for i, tokens in enumerate(sentences)])
    rows = sorted(embed_dataset(ds, weights=str(allennlp_dir), workers=2, rows_per_batch=4).take_all(),
                  key=lambda row: row["id"])
    assert [row["id"] for row in rows] == list(range(len(sentences)))
    for row, tokens in zip(rows, sentences):
        assert numpy.array_equal(row["elmo"], allennlp_bilm.embed([tokens])[0]) if tokens else \
            row["elmo"].shape == (3, 0, 32)
    texts = ray.data.from_items([{"text": "Hello there, world."}, {"text": "Bye."}])
    rows = embed_dataset(texts, weights=str(allennlp_dir), text_column="text", lang="en", layers="top",
                         output_column="top").take_all()
    by_text = {row["text"]: row for row in rows}
    assert list(by_text["Hello there, world."]["tokens"]) == ["Hello", "there", ",", "world", "."]
    expected = allennlp_bilm.embed([["Hello", "there", ",", "world", "."]])[0][-1]
    assert numpy.array_equal(by_text["Hello there, world."]["top"], expected)


def test_ray_glob_leaves_its_own_output_out(local_ray, allennlp_dir, tmp_path):
    """Regression (tests/regression/test_inputs_review_own_output.py, on Ray): a glob over the output's
    folder matched an earlier OUTPUT, which `--overwrite` then read as text."""
    folder = tmp_path / "g"
    folder.mkdir()
    (folder / "a.txt").write_text("a b\nc\n", encoding="utf-8")
    out = folder / "out.hdf5"
    embed(folder / "*", out, "-w", allennlp_dir, "--engine", "ray")
    first, mapping, _ = datasets(out)
    embed(folder / "*", out, "-w", allennlp_dir, "--engine", "ray", "--overwrite")
    again, again_mapping, _ = datasets(out)
    assert sorted(again) == sorted(first) == ["0", "1"] and again_mapping == mapping
    assert all(numpy.array_equal(again[k], first[k]) for k in first)
