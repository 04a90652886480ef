"""Regression: on `--engine ray`, a bad input file left an OUTPUT.partial that blocked the rerun the
error message suggested, and the message came with Ray's long traceback and retry advice.

The sink was opened before any input was read, and the file was read only by
a Ray task, whose failure Ray Data logs with its own traceback (and appends
"Failed to apply UDF transform ... retried" to the message). Local inputs
are now checked on the driver before the output is opened, as the local
engine does; a bad remote one, read by a worker, comes to the driver as a
row whose error the driver raises (no failed task); and a .partial the run
created and wrote nothing into is removed. Tested at the function level,
without a Ray instance (tests/embedding/test_ray.py runs the pipeline).
"""
import h5py
import numpy
import pytest

from spacy_elmo.embedding import ray as ray_engine
from spacy_elmo.embedding.dump import DumpError, partial_path, plan_inputs

pytest.importorskip("ray.data", reason='needs Ray Data: pip install "spacy-elmo[ray]"')

BAD = "bad.txt: line 2 (column 5) holds the byte 0xff"


@pytest.fixture
def bad_text(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"ok line\nbad \xff\xfe line\nmore\n")
    return path


class _DriverDataset:
    """Stands in for the Ray Dataset: runs each map on the driver, and the workers' step adds zero vectors."""

    def __init__(self, batches):
        self.batches = list(batches)

    def map_batches(self, fn, **kwargs):
        return _DriverDataset(rows for batch in self.batches for rows in fn(batch))

    def iter_batches(self, **kwargs):
        for batch in self.batches:
            arrays = {name: numpy.array(values + [None], dtype=object)[:-1] for name, values in batch.items()}
            arrays["elmo"] = [numpy.zeros((3, len(tokens), 32), numpy.float32) for tokens in batch["tokens"]]
            yield arrays


@pytest.fixture
def no_ray(monkeypatch):
    """embed_files without a Ray instance (connected already, as it were): the pipeline runs on the driver."""
    monkeypatch.setattr(ray_engine, "connect", lambda address, num_cpus: False)
    monkeypatch.setattr(ray_engine, "_gpus", lambda ray, gpus: 0.0)
    monkeypatch.setattr(ray_engine, "_from_items",
                        lambda ray, items: _DriverDataset({"file": numpy.array([i["file"]])} for i in items))
    monkeypatch.setattr(ray_engine, "_embed_step", lambda ds, *args, **kwargs: ds)


def test_a_bad_local_input_fails_before_the_output_is_opened(allennlp_dir, bad_text, tmp_path, monkeypatch):
    def connect(*args):
        raise AssertionError("Ray must not be started for bad local input")

    monkeypatch.setattr(ray_engine, "connect", connect)
    out = tmp_path / "out.hdf5"
    with pytest.raises(DumpError, match="line 2") as caught:
        ray_engine.embed_files(str(bad_text), out, weights=str(allennlp_dir))
    assert "Failed to" not in str(caught.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.txt"]


@pytest.mark.usefixtures("no_ray")
def test_a_bad_input_read_by_a_worker_is_one_line_and_leaves_no_empty_partial(allennlp_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(ray_engine, "_check_local_inputs", lambda plan: None)  # as for a URL: workers read it
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"bad \xff\xfe line\nmore\n")  # the first unit is bad: nothing gets written
    out = tmp_path / "out.hdf5"
    with pytest.raises(DumpError) as caught:
        ray_engine.embed_files(str(bad), out, weights=str(allennlp_dir))
    message = str(caught.value)
    assert "bad.txt: line 1 (column 5) holds the byte 0xff" in message
    assert "--resume" not in message and "Failed to" not in message and "\n" not in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.txt"]  # no .partial (nor lock) blocks the rerun


@pytest.mark.usefixtures("no_ray")
def test_units_before_a_bad_one_are_kept_and_the_message_says_resume(allennlp_dir, bad_text, tmp_path, monkeypatch):
    monkeypatch.setattr(ray_engine, "_check_local_inputs", lambda plan: None)
    out = tmp_path / "out.hdf5"
    with pytest.raises(DumpError) as caught:
        ray_engine.embed_files(str(bad_text), out, weights=str(allennlp_dir))
    message = str(caught.value)
    assert BAD in message and "out.hdf5.partial keeps the units embedded before it" in message
    with h5py.File(partial_path(out), "r") as f:
        assert [k for k in f.keys() if k.isdigit()] == ["0"]


def test_the_reading_worker_hands_bad_input_over_as_a_row(bad_text):
    plan = plan_inputs(str(bad_text))
    batches = list(ray_engine._read_file({"file": numpy.array([0])}, plan, ray_engine._Skip(), 100))
    (rows,) = batches
    assert rows["key"] == ["0", ""] and rows["error"][0] == "" and BAD in rows["error"][1]
    assert rows["todo"] == [True, False]


def test_rays_retry_advice_is_cut_from_the_message():
    err = DumpError(f"{BAD}, not UTF-8\nFailed to apply UDF transform after 1/1 attempts (total backoff 0.0s).\n"
                    "To change retry attempts, ...")
    assert ray_engine.cause_message(err) == f"{BAD}, not UTF-8"
