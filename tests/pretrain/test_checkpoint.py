"""Checkpoints hold only tensors and plain values, load without running code, and
anything else is refused with one clear CheckpointError (and, on the command
line, one message and exit code 1)."""
import pytest
import torch
from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.pretrain import load_config, pretrain
from spacy_elmo.pretrain.checkpoint import CheckpointError, load_checkpoint, save_checkpoint


class _RunsCode:
    """Unpickling this creates the file `marker`: the shape of a malicious checkpoint."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.fixture
def run_dir(tiny_config_path, small_corpus, tmp_path):
    config = load_config(tiny_config_path, {"paths.train": str(small_corpus), "training.max_steps": 2})
    pretrain(config, tmp_path / "run", progress=False)
    return tmp_path / "run"


def test_a_written_checkpoint_is_plain_data(run_dir):
    state = torch.load(run_dir / "checkpoint.pt", weights_only=True)  # PyTorch's safe loader accepts it
    assert state["progress"]["step"] == 2
    assert isinstance(state["sampler"][0], torch.Tensor) and isinstance(state["rng"]["torch"], torch.Tensor)
    assert load_checkpoint(run_dir / "checkpoint.pt")["vocab"] == state["vocab"]


def test_a_pickle_that_runs_code_is_refused_and_never_run(tmp_path):
    marker = tmp_path / "code-ran"
    path = tmp_path / "checkpoint.pt"
    torch.save({"model": {}, "payload": _RunsCode(str(marker))}, path)
    with pytest.raises(CheckpointError, match="refused: the file holds objects other than tensors"):
        load_checkpoint(path)
    assert not marker.exists()


def test_resume_from_a_code_running_checkpoint_on_the_command_line(tiny_config_path, small_corpus, run_dir, tmp_path):
    marker = tmp_path / "code-ran"
    state = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    state["vocab"] = _RunsCode(str(marker))
    torch.save(state, run_dir / "checkpoint.pt")
    result = CliRunner().invoke(app, ["pretrain", str(tiny_config_path), str(run_dir), "--resume", "--quiet",
                                      "--paths.train", str(small_corpus), "--training.max_steps", "4"])
    assert result.exit_code == 1, result.output
    assert "refused" in " ".join(result.output.split()) and "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)
    assert not marker.exists()


@pytest.mark.parametrize("change,message", [
    (lambda s: s.pop("optimizer"), "keys: missing optimizer"),
    (lambda s: s.update(extra=1), "keys: unknown extra"),
    (lambda s: s["progress"].update(step="2"), "'progress' must be"),
    (lambda s: s["model"].update(bogus=[1.0]), "'model' must be a mapping of parameter names to tensors"),
    (lambda s: s["rng"].update(numpy=[1, 2]), "'rng' must be"),
    (lambda s: s.update(sampler=[]), "'sampler' must be"),
    (lambda s: s.update(vocab="the a of"), "'vocab' must be a list of words"),
    (lambda s: s.update(carried=[[torch.zeros(1)]]), "'carried' must be"),
])
def test_wrong_keys_and_types_are_refused(run_dir, tmp_path, change, message):
    state = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    change(state)
    torch.save(state, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(tmp_path / "bad.pt")
    with pytest.raises(CheckpointError, match="refusing to write a malformed checkpoint"):
        save_checkpoint(tmp_path / "never.pt", state)
    assert not (tmp_path / "never.pt").exists()


@pytest.mark.parametrize("content,message", [
    (b"", "not a readable checkpoint"),
    (b"just some text\n", "not a readable checkpoint"),
    (bytes(range(256)) * 4, "not a readable checkpoint"),
])
def test_files_that_are_not_checkpoints(tmp_path, content, message):
    path = tmp_path / "checkpoint.pt"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(path)


def test_a_tensor_file_or_a_truncated_checkpoint_is_not_a_checkpoint(run_dir, tmp_path):
    torch.save(torch.ones(3), tmp_path / "tensor.pt")
    with pytest.raises(CheckpointError, match="holds a Tensor, not a mapping"):
        load_checkpoint(tmp_path / "tensor.pt")
    data = (run_dir / "checkpoint.pt").read_bytes()
    (tmp_path / "cut.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="not a readable checkpoint"):
        load_checkpoint(tmp_path / "cut.pt")


def test_a_checkpoint_of_other_shapes_does_not_fit(tiny_config_path, small_corpus, run_dir):
    state = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    name = next(iter(state["model"]))
    state["model"][name] = torch.zeros(1)
    torch.save(state, run_dir / "checkpoint.pt")
    config = load_config(tiny_config_path, {"paths.train": str(small_corpus), "training.max_steps": 4})
    with pytest.raises(CheckpointError, match="does not fit this run"):
        pretrain(config, run_dir, resume=True, progress=False)
