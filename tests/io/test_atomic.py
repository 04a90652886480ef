"""Atomic writes: the target appears complete on leaving the block, or stays as it was."""
import pytest

from spacy_elmo.io.atomic import atomic_path, temporary_path


def test_the_target_is_replaced_on_success_and_untouched_on_an_error(tmp_path):
    target = tmp_path / "model.bin"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            assert tmp == temporary_path(target) and tmp.parent == target.parent
            tmp.write_text("half")
            raise RuntimeError("crash while writing")
    assert target.read_text() == "old" and not temporary_path(target).exists()
    with atomic_path(target) as tmp:
        tmp.write_text("new")
        assert target.read_text() == "old"  # nothing under the name until the block ends
    assert target.read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["model.bin"]
