"""The SHA-256 of a file read in blocks equals hashlib's over its whole bytes."""
import hashlib

from spacy_elmo.io.checksum import sha256_file


def test_sha256_of_a_file_of_several_blocks(tmp_path):
    data = bytes(range(256)) * 9000  # 2.2 MiB: three blocks of 1 MiB
    (tmp_path / "f").write_bytes(data)
    assert sha256_file(tmp_path / "f") == hashlib.sha256(data).hexdigest()
    (tmp_path / "empty").write_bytes(b"")
    assert sha256_file(tmp_path / "empty") == hashlib.sha256(b"").hexdigest()
