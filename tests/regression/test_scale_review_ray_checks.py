"""Regression: `embed --engine ray` found bad settings only on the workers, or never.

* `--backend bogus`: Ray started, then every worker actor failed to build its biLM, four long
  tracebacks (the local engine says it in one line). The driver now sets the backend on its own
  model before Ray starts (on a cluster, `--address`, it checks the name), and says it in one line.
* `--gpus-per-worker 1` on a machine without a GPU (the command's own Ray instance): Ray Data waited
  forever for an actor it could never place. The GPUs the workers ask for are now checked against
  the local instance's before the pipeline starts.

No Ray instance is started: the steps that would start one fail the test instead.
"""
import pytest

from spacy_elmo.embedding import ray as ray_engine

from ..cli.invoke import refused

ray = pytest.importorskip("ray", reason='needs Ray Data: pip install "spacy-elmo[ray]"')
pytest.importorskip("ray.data", reason='needs Ray Data: pip install "spacy-elmo[ray]"')


@pytest.fixture
def text(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("The cat sat .\n\na dog ran off\n", encoding="utf-8")
    return path


def _never(*args, **kwargs):
    raise AssertionError("the Ray pipeline was started")


def test_a_bad_backend_is_one_line_before_ray_starts(allennlp_dir, text, tmp_path, monkeypatch):
    monkeypatch.setattr(ray_engine, "connect", _never)
    out = tmp_path / "out.hdf5"
    refused(["embed", text, out, "-w", allennlp_dir, "-q", "--engine", "ray", "--backend", "bogus"],
            "--backend: backend 'bogus': unknown backend 'bogus'")
    refused(["embed", text, out, "-w", allennlp_dir, "-q", "--engine", "ray", "--backend", "bogus", "--address",
             "ray://nowhere:10001"], "--backend: backend 'bogus': unknown backend 'bogus'")
    assert not out.exists() and not (tmp_path / "out.hdf5.partial").exists()
    with pytest.raises(ray_engine.DumpError, match="unknown backend 'bogus'"):
        ray_engine.embed_dataset(None, backend="bogus")


def test_more_gpus_than_the_local_instance_has_are_refused(allennlp_dir, text, tmp_path, monkeypatch):
    """The command's own Ray instance (no --address) with the GPUs this machine has (none here)."""
    stopped = []
    monkeypatch.setattr(ray_engine, "connect", lambda address, num_cpus: True)  # "started a local instance"
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 2.0})
    monkeypatch.setattr(ray, "shutdown", lambda: stopped.append(True))
    monkeypatch.setattr(ray_engine, "_from_items", _never)
    out = tmp_path / "out.hdf5"
    refused(["embed", text, out, "-w", allennlp_dir, "-q", "--engine", "ray", "--gpus-per-worker", "1"],
            "--gpus-per-worker 1 x --workers 1 needs 1 GPU(s)", "has 0")
    assert stopped and not out.exists() and not (tmp_path / "out.hdf5.partial").exists()
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 2.0, "GPU": 1.0})
    refused(["embed", text, out, "-w", allennlp_dir, "-q", "--engine", "ray", "--gpus-per-worker", "1",
             "--workers", "2"], "needs 2 GPU(s)", "has 1")
