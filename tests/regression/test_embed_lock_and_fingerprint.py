"""Regression: the output lock outlived a failed finish, and the model fingerprint missed vocabulary settings.

- `Hdf5Sink.finish` wrote the index outside the block that releases the
  output's lock, so a full disk at that moment left `.NAME.lock` held: a
  retry in the same process was refused as "being written by another run".
- On a file system without `flock` the lock file was left behind.
- `model_fingerprint` hashed the word table's and character dictionary's
  entries but not their settings (lower-casing, truncation, specials), which
  change the vectors: a resume under such a model was not refused.
"""
import errno
import fcntl

import pytest

from spacy_elmo.embedding.dump import DumpError, OutputLock, embed_file, model_fingerprint
from spacy_elmo.bilm.vocab import WordTableVocabulary
from tests.bilm.word_tables import table_bilm


def test_a_failed_finish_releases_the_lock(allennlp_bilm, tmp_path, monkeypatch):
    import h5py

    text = tmp_path / "in.txt"
    text.write_text("The cat sat .\nA dog .\n", encoding="utf-8")
    output = tmp_path / "out.hdf5"
    real = h5py.Group.create_dataset

    def full_disk_at_the_index(self, name, *args, **kwargs):
        if name == "sentence_to_index":  # written by finish, before the commit
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, name, *args, **kwargs)

    monkeypatch.setattr(h5py.Group, "create_dataset", full_disk_at_the_index)
    with pytest.raises(OSError, match="No space left"):
        embed_file(allennlp_bilm, text, output)
    monkeypatch.undo()
    assert not (tmp_path / ".out.hdf5.lock").exists()
    embed_file(allennlp_bilm, text, output, resume=True)  # not "being written by another run"
    assert output.exists()


def test_no_lock_file_is_left_where_the_file_system_has_no_locks(tmp_path, monkeypatch):
    def no_locks(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    lock = OutputLock(tmp_path / ".out.lock", tmp_path / "out")
    assert lock.fd is None and not (tmp_path / ".out.lock").exists()
    lock.release()


def test_the_fingerprint_covers_the_vocabularies_settings():
    from spacy_elmo.bilm import BiLM
    from tests.bilm.word_tables import WORDS, table_config

    bilm = table_bilm(0)
    assert model_fingerprint(bilm) == model_fingerprint(table_bilm(0))
    cased = BiLM(table_config(), word_table_vocab=WordTableVocabulary(WORDS, lowercase=False))
    cased.load_state_dict(bilm.state_dict())  # the same weights, words read another way
    assert model_fingerprint(cased) != model_fingerprint(bilm)


def test_the_lock_refuses_a_second_run(tmp_path):
    first = OutputLock(tmp_path / ".out.lock", tmp_path / "out")
    with pytest.raises(DumpError, match="being written by another run"):
        OutputLock(tmp_path / ".out.lock", tmp_path / "out")
    first.release()
    OutputLock(tmp_path / ".out.lock", tmp_path / "out").release()
