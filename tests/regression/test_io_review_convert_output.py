"""Regression: `convert` ended in a raw traceback when its output could not be written.

Only WeightsError and ValueError were caught, so an OSError from creating or
writing OUTPUT_DIR (an existing file in its place, a file as its parent, a
full disk, a read-only or forbidden folder) came out as a traceback. Each is
now one line naming OUTPUT_DIR and the reason, exit status 1, for both
targets. Also: the native-only flags (--float16, --table-float16,
--no-softmax) were silently ignored with `--to published`; they are now
refused, before anything is loaded or written.
"""
import errno

import pytest

from spacy_elmo.io import atomic

from ..cli.invoke import refused
from ..io.model_server import published_dir, tiny_bilm

TARGETS = [[], ["--to", "published"]]


@pytest.fixture
def model(tmp_path):
    return published_dir(tmp_path / "model", tiny_bilm(4))


@pytest.mark.parametrize("target", TARGETS)
def test_an_existing_file_as_output(tmp_path, model, target):
    output = tmp_path / "out"
    output.write_text("not a directory")
    refused(["convert", model, output, *target], str(output), "not a directory")
    assert output.read_text() == "not a directory"


@pytest.mark.parametrize("target", TARGETS)
def test_a_file_as_the_outputs_parent(tmp_path, model, target):
    (tmp_path / "file").write_text("x")
    output = tmp_path / "file" / "out"
    refused(["convert", model, output, *target], f"{output}: cannot write (Not a directory)")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("error,reason", [
    (OSError(errno.ENOSPC, "No space left on device"), "No space left on device"),
    (PermissionError(errno.EACCES, "Permission denied"), "Permission denied"),
    (OSError(errno.EROFS, "Read-only file system"), "Read-only file system"),
])
def test_a_write_that_fails(tmp_path, model, monkeypatch, target, error, reason):
    """Injected where every model file is committed (fsync can report a full disk), so deterministic."""
    def failing(path, flags):
        raise error

    monkeypatch.setattr(atomic, "fsync", failing)
    output = tmp_path / "out"
    refused(["convert", model, output, *target], f"{output}: cannot write ({reason})")


@pytest.mark.parametrize("flag", ["--float16", "--table-float16", "--no-softmax"])
def test_native_only_flags_with_a_published_target(tmp_path, model, flag):
    output = tmp_path / "out"
    refused(["convert", model, output, "--to", "published", flag], flag, "only for a native target")
    assert not output.exists()
