"""`embed`'s inputs on the local engine: each format, globs, file sharding, the sentence index,
fsspec URLs, and Ray being optional. Parquet output is tests/embedding/test_parquet.py."""
import hashlib
import json
import sys

import numpy
import pytest
from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.embedding import inputs
from spacy_elmo.embedding.dump import DumpError, embed_file, join_shards, read_dump, shard_path

from .inputs_data import EXPECTED, WRITERS, datasets, write_all, write_text

runner = CliRunner()


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_each_format_gives_its_units_with_the_models_vectors(allennlp_bilm, tmp_path, fmt):
    name, writer = WRITERS[fmt]
    path = writer(tmp_path / name)
    out = embed_file(allennlp_bilm, path, tmp_path / "out.hdf5", lang="en", chunk_lines=2)
    arrays, mapping = datasets(out)
    expected = EXPECTED[fmt]
    assert sorted(arrays) == sorted(str(i) for i, _, _ in expected)
    for index, tokens, text in expected:
        array = arrays[str(index)]
        assert array.shape == (3, len(tokens), 32) and array.dtype == numpy.float32
        if tokens:
            assert numpy.array_equal(array, allennlp_bilm.embed([tokens])[0])
        assert mapping[text] == str(index) or text == "The cat sat ."
    if fmt == "text":
        assert mapping["The cat sat ."] == "3"  # the last occurrence, as in the reference


def test_docbin_units_line_up_with_the_docs_tokens(tmp_path):
    path = WRITERS["spacy"][1](tmp_path / "d.spacy")
    units = list(inputs.read_units(str(path), "spacy"))
    assert [(u.number, u.doc, u.start, len(u.tokens)) for u in units] == [(0, 0, 0, 3), (1, 0, 3, 4), (2, 1, 0, 3)]


def test_formats_come_from_the_extension_unless_given(allennlp_dir, tmp_path):
    assert [inputs.detect_format(p) for p in ("a.txt", "a", "a.jsonl", "a.ndjson", "a.conllu.gz", "b.spacy")] == [
        "text", "text", "jsonl", "jsonl", "conllu", "spacy"]
    assert inputs.detect_format("a.txt", "jsonl") == "jsonl"
    with pytest.raises(DumpError, match="unknown input format 'xml'"):
        inputs.detect_format("a.txt", "xml")
    # a .txt holding JSON lines, read as JSONL on request
    path = tmp_path / "records.txt"
    path.write_text(json.dumps({"tokens": ["a", "b"]}) + "\n")
    result = runner.invoke(app, ["embed", str(path), str(tmp_path / "o.h5"), "-q", "--input-format", "jsonl",
                                 "-w", str(allennlp_dir)])
    assert result.exit_code == 0, result.output
    assert datasets(tmp_path / "o.h5")[0]["0"].shape[1] == 2


def test_jsonl_errors_name_the_line(allennlp_bilm, tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"tokens": ["ok"]}) + "\n" + json.dumps({"text": "needs a tokenizer"}) + "\n")
    with pytest.raises(DumpError, match=r"t.jsonl: line 2: \"text\" needs a tokenizer: pass --lang"):
        embed_file(allennlp_bilm, path, tmp_path / "o.h5")
    assert not (tmp_path / "o.h5.partial").exists()  # refused before any work
    path.write_text('{"tokens": ["ok"]}\n{"tokens": "not a list"}\n')
    with pytest.raises(DumpError, match='line 2: "tokens" must be a list of strings'):
        embed_file(allennlp_bilm, path, tmp_path / "o.h5")
    path.write_text('{"tokens": ["ok"]}\n{"tokens": [\n')
    with pytest.raises(DumpError, match="line 2: not JSON"):
        embed_file(allennlp_bilm, path, tmp_path / "o.h5")


def test_a_glob_of_several_files_keys_units_by_file(allennlp_bilm, inputs_dir, tmp_path):
    out = embed_file(allennlp_bilm, str(inputs_dir / "*"), tmp_path / "all.hdf5", lang="en")
    arrays, mapping = datasets(out)
    order = ["conllu", "jsonl", "spacy", "text"]  # the glob's matches, sorted: in.conllu, in.jsonl, in.spacy, in.txt
    expected = {f"{f}:{i}": tokens for f, fmt in enumerate(order) for i, tokens, _ in EXPECTED[fmt]}
    assert sorted(arrays) == sorted(expected)
    for key, tokens in expected.items():
        assert arrays[key].shape == (3, len(tokens), 32)
    assert mapping["The cat sat ."] == "3:3" and mapping["Do n't go ."] == "0:1"
    # the same files listed one by one give the same file
    listed = embed_file(allennlp_bilm, [str(inputs_dir / n) for n in ("in.conllu", "in.jsonl", "in.spacy", "in.txt")],
                        tmp_path / "listed.hdf5", lang="en")
    again, mapping_again = datasets(listed)
    assert mapping_again == mapping and all(numpy.array_equal(arrays[k], again[k]) for k in arrays)
    with pytest.raises(DumpError, match="the glob matches nothing"):
        embed_file(allennlp_bilm, str(inputs_dir / "*.xml"), tmp_path / "none.hdf5")
    with pytest.raises(DumpError, match="a directory"):
        embed_file(allennlp_bilm, str(inputs_dir), tmp_path / "none.hdf5")


def test_file_sharding_opens_only_the_shards_files(allennlp_bilm, tmp_path, monkeypatch):
    """Several files: shard K takes whole files; a broken file outside the shard is never opened."""
    for name in ("a", "b", "c"):
        write_text(tmp_path / f"{name}.txt")
    (tmp_path / "d.txt").write_bytes(b"\x00binary\n")  # position 3: shard 1 of 2
    opened = []
    real = inputs.open_input
    monkeypatch.setattr(inputs, "open_input", lambda path, mode="rb": opened.append(path) or real(path, mode))
    out = tmp_path / "sharded.hdf5"
    embed_file(allennlp_bilm, str(tmp_path / "*.txt"), out, shard=(0, 2))
    assert sorted({p.rsplit("/", 1)[-1] for p in opened}) == ["a.txt", "c.txt"]
    arrays, _ = datasets(shard_path(out, 0, 2))
    assert {k.split(":")[0] for k in arrays} == {"0", "2"}
    with pytest.raises(DumpError, match="d.txt: line 1 .* NUL byte"):
        embed_file(allennlp_bilm, str(tmp_path / "*.txt"), out, shard=(1, 2))


def test_file_shards_join_to_a_single_runs_file(allennlp_bilm, tmp_path):
    for name in ("a", "b", "c"):
        write_text(tmp_path / f"{name}.txt")
    pattern = str(tmp_path / "*.txt")
    single = embed_file(allennlp_bilm, pattern, tmp_path / "single.hdf5")
    out = tmp_path / "joined.hdf5"
    for k in range(2):
        embed_file(allennlp_bilm, pattern, out, shard=(k, 2))
    join_shards(out, 2)
    (a, map_a), (b, map_b) = datasets(single), datasets(out)
    assert sorted(a) == sorted(b) and map_a == map_b and map_a["The cat sat ."] == "2:3"
    assert all(numpy.array_equal(a[k], b[k]) for k in a)


def test_without_the_sentence_index(allennlp_bilm, allennlp_dir, tmp_path):
    path = write_text(tmp_path / "in.txt")
    out = embed_file(allennlp_bilm, path, tmp_path / "o.hdf5", sentence_index=False)
    arrays, mapping = datasets(out)
    assert mapping is None and sorted(arrays) == ["0", "1", "2", "3", "4"]
    index, f = read_dump(out)
    with f:
        assert index == {} and not f.attrs["sentence_index"]
    result = runner.invoke(app, ["embed", str(path), str(tmp_path / "cli.h5"), "-q", "--no-sentence-index",
                                 "-w", str(allennlp_dir)])
    assert result.exit_code == 0, result.output
    assert datasets(tmp_path / "cli.h5")[1] is None


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_ray_missing_is_one_clear_error(allennlp_dir, tmp_path, monkeypatch):
    from spacy_elmo.embedding.ray import require_ray

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r'pip install "spacy-elmo\[ray\]"'):
        require_ray()
    path = write_text(tmp_path / "in.txt")
    result = runner.invoke(app, ["embed", str(path), str(tmp_path / "o.h5"), "-w", str(allennlp_dir), "-q",
                                 "--engine", "ray"])
    assert result.exit_code == 1 and 'pip install "spacy-elmo[ray]"' in " ".join(result.output.split())
    result = runner.invoke(app, ["embed", str(path), str(tmp_path / "o.h5"), "--engine", "spark"])
    assert result.exit_code == 1 and "--engine must be one of" in result.output


def test_cli_takes_several_inputs(allennlp_dir, inputs_dir, tmp_path):
    files = [str(inputs_dir / n) for n in ("in.txt", "in.jsonl")]
    result = runner.invoke(app, ["embed", *files, str(tmp_path / "o.h5"), "-w", str(allennlp_dir), "-q",
                                 "--lang", "en"])
    assert result.exit_code == 0, result.output
    arrays, mapping = datasets(tmp_path / "o.h5")
    assert sorted(arrays) == ["0:0", "0:1", "0:2", "0:3", "0:4", "1:0", "1:2", "1:3"]
    assert mapping["Hello there, world."] == "1:2"


def test_write_all_sorts_as_documented(tmp_path):
    assert sorted(p.name for p in write_all(tmp_path).values()) == ["in.conllu", "in.jsonl", "in.spacy", "in.txt"]


def test_fsspec_urls_in_and_out(allennlp_bilm, tmp_path):
    """Inputs, globs and outputs as fsspec URLs (its in-memory filesystem stands for s3:// and the like)."""
    fsspec = pytest.importorskip("fsspec")
    from spacy_elmo.embedding.parquet import read_parts

    fs = fsspec.filesystem("memory")
    for name in ("a", "b"):
        with fs.open(f"/corpus/{name}.txt", "wb") as handle:
            handle.write(write_text(tmp_path / f"{name}.txt").read_bytes())
    local = embed_file(allennlp_bilm, str(tmp_path / "*.txt"), tmp_path / "local.hdf5")
    expected, mapping = datasets(local)
    assert embed_file(allennlp_bilm, "memory://corpus/*.txt", "memory://out/elmo.hdf5") == "memory://out/elmo.hdf5"
    fs.get_file("/out/elmo.hdf5", str(tmp_path / "fetched.hdf5"))
    got, got_mapping = datasets(tmp_path / "fetched.hdf5")
    assert got_mapping == mapping and sorted(got) == sorted(expected)
    assert all(numpy.array_equal(got[k], expected[k]) for k in expected)
    embed_file(allennlp_bilm, "memory://corpus/*.txt", "memory://out/parquet", output_format="parquet")
    rows = dict(read_parts("memory://out/parquet"))
    assert sorted(rows) == sorted(expected) and all(numpy.array_equal(rows[k], expected[k]) for k in expected)
    assert not [p for p in fs.ls("/out/parquet", detail=False) if p.rsplit("/", 1)[-1].startswith(".")]
    fs.rm(["/corpus", "/out"], recursive=True)


def test_importing_the_engines_pulls_in_neither_spacy_nor_ray():
    """spaCy only to read its formats or tokenize, Ray only when called (checked in a fresh interpreter)."""
    import subprocess

    probe = ("import json, sys\nimport spacy_elmo.embedding.dump, spacy_elmo.embedding.ray\n"
             "import spacy_elmo.embedding.parquet\n"
             "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('spacy', 'thinc', 'ray'))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
