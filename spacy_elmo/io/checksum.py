"""The SHA-256 of a file, read in blocks: how every stored or downloaded file is checked."""
import hashlib
from pathlib import Path
from typing import Union


def sha256_file(path: Union[str, Path]) -> str:
    """The hex SHA-256 digest of the file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


__all__ = ["sha256_file"]
