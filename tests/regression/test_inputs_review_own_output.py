"""Regression: a glob over the output's folder read the run's own output as input.

What went wrong: `embed`'s globs were expanded afresh on every run, so
`embed_file(M, "g/*", "g/out.h5")` matched the run's own `g/out.h5.partial`
(`--resume` then refused, reading it as text), an earlier `g/out.h5`
(`--overwrite` read the old HDF5 as text), another shard's
`g/out.h5.shard-K-of-N` (shards saw different input lists, and the join was
refused), and a Parquet output directory's parts.

What happens now: a glob's matches leave out the run's own output files,
compared by resolved path, and naming one of them as an input is one DumpError
before any work.
"""
import h5py
import numpy
import pytest

from spacy_elmo import faults
from spacy_elmo.embedding.dump import embed_file, join_shards
from spacy_elmo.embedding.inputs import DumpError, expand_inputs


@pytest.fixture
def folder(tmp_path):
    g = tmp_path / "g"
    g.mkdir()
    (g / "a.txt").write_text("a b\nc\nd e\n", encoding="utf-8")
    (g / "b.txt").write_text("f\ng\n", encoding="utf-8")
    return g


def _keys(path):
    with h5py.File(path, "r") as f:
        return sorted(k for k in f if k != "sentence_to_index")


def test_resume_after_a_stop_reads_the_same_files(allennlp_bilm, folder, monkeypatch):
    out = folder / "out.h5"
    monkeypatch.setenv(faults.VARIABLE, "embed.chunk:1:enospc")
    faults.reset()
    with pytest.raises(OSError):
        embed_file(allennlp_bilm, str(folder / "*"), str(out), chunk_lines=2)
    monkeypatch.delenv(faults.VARIABLE)
    faults.reset()
    assert (folder / "out.h5.partial").is_file()
    embed_file(allennlp_bilm, str(folder / "*"), str(out), chunk_lines=2, resume=True)
    assert _keys(out) == ["0:0", "0:1", "0:2", "1:0", "1:1"]


def test_overwrite_and_parquet_leave_the_output_out(allennlp_bilm, folder):
    out = folder / "out.h5"
    embed_file(allennlp_bilm, str(folder / "*"), str(out))
    embed_file(allennlp_bilm, str(folder / "*"), str(out), overwrite=True)
    assert _keys(out) == ["0:0", "0:1", "0:2", "1:0", "1:1"]
    out.unlink()  # another run's output is input like any file: only the run's own is left out
    parquet = folder / "pq"
    embed_file(allennlp_bilm, str(folder / "*"), str(parquet), output_format="parquet")
    embed_file(allennlp_bilm, str(folder / "**" / "*"), str(parquet), output_format="parquet", overwrite=True)
    assert expand_inputs([str(folder / "**" / "*")], str(parquet)) == expand_inputs([str(folder / "*.txt")])


def test_shards_see_one_input_list_and_join(allennlp_bilm, folder):
    out = folder / "out.h5"
    for k in range(2):
        embed_file(allennlp_bilm, str(folder / "*"), str(out), shard=(k, 2))
    joined = join_shards(out, 2)
    assert _keys(joined) == ["0:0", "0:1", "0:2", "1:0", "1:1"]


def test_naming_the_output_as_an_input_is_one_error(allennlp_bilm, folder):
    out = folder / "out.h5"
    embed_file(allennlp_bilm, str(folder / "a.txt"), str(out))
    with pytest.raises(DumpError, match="own output"):
        embed_file(allennlp_bilm, [str(folder / "b.txt"), str(folder / "." / "out.h5")], str(out), overwrite=True)
    with h5py.File(out, "r") as f:  # untouched
        assert numpy.asarray(f["0"]).shape[1] == 2


def test_a_glob_of_only_output_files_is_one_error(folder):
    (folder / "out.h5").write_bytes(b"")
    with pytest.raises(DumpError, match="only this run's own output"):
        expand_inputs([str(folder / "out*")], str(folder / "out.h5"))
