"""Regression: a downstream training's checkpoint (model-last, model-best) was renamed into place
without its files being flushed to disk. After a power loss the new names could point at files whose
data never reached the disk: a model-last that loads as garbage or not at all, where the old one had
been whole. `_replace_dir` now flushes the new folder's files and entries (`fsync_tree`) before the
renames and the parent's entries after them. The test records every flush and rename in order."""
import os

import spacy_elmo.io.atomic as atomic
import spacy_elmo.resumable_training as resumable
from spacy_elmo.resumable_training import MODEL_BEST, MODEL_LAST
from tests.regression.test_train_script_exit_status_and_settings import _train, project  # noqa: F401


def test_every_file_of_a_checkpoint_is_flushed_before_its_rename(monkeypatch, project, tmp_path):  # noqa: F811
    events = []
    real_fsync, real_rename = atomic.fsync, os.rename

    def fsync(path, flags):
        events.append(("fsync", os.path.realpath(path)))
        real_fsync(path, flags)

    def rename(source, target, *args, **kwargs):
        events.append(("rename", os.path.realpath(source), os.path.realpath(target)))
        real_rename(source, target, *args, **kwargs)

    monkeypatch.setattr(atomic, "fsync", fsync)
    monkeypatch.setattr(os, "rename", rename)  # Path.rename calls os.rename
    output = tmp_path / "out"
    assert _train(monkeypatch, project, output) == 0
    flushed_at = {}
    for index, event in enumerate(events):
        if event[0] == "fsync":
            flushed_at.setdefault(event[1], []).append(index)
    into_place = [(i, e) for i, e in enumerate(events)
                  if e[0] == "rename" and os.path.basename(e[2]) in (MODEL_LAST, MODEL_BEST)]
    assert {os.path.basename(e[2]) for _, e in into_place} == {MODEL_LAST, MODEL_BEST}
    for index, (_, source, target) in into_place:
        # the folder as it was renamed: every file in it now (same names) was flushed under `source`
        for folder, _, files in os.walk(target):
            for name in files + [""]:
                written = os.path.normpath(os.path.join(source, os.path.relpath(os.path.join(folder, name), target)))
                assert any(i < index for i in flushed_at.get(written, [])), (written, target)
        parent = os.path.dirname(target)
        assert any(i > index for i in flushed_at.get(parent, [])), parent  # the rename itself reached the disk
    assert resumable.read_state(output)["stopped"] == "max steps"
