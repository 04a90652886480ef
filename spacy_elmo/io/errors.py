"""Errors raised when a weight directory cannot be read or written."""
import errno

from ..bilm.errors import SpacyElmoError

# an OSError's errno when a write failed for want of room or rights: no space, a quota (not on Windows),
# a read-only file system, no permission
WRITE_ERRNOS = frozenset(
    code for code in (errno.ENOSPC, getattr(errno, "EDQUOT", None), errno.EROFS, errno.EACCES, errno.EPERM)
    if code is not None
)


class WeightsError(SpacyElmoError, ValueError):
    """A weight file is missing, unreadable, corrupted, or disagrees with its options.

    The message always names the file and, where one is to blame, the dataset.
    """


class DamagedFileError(WeightsError):
    """A file whose bytes are not those that were written: a checksum mismatch, a file cut short or
    unreadable as its format, a listed file gone. A fresh copy fixes it (for a cached download:
    `download --force`); a model this version refuses for its contents is a plain WeightsError."""


__all__ = ["DamagedFileError", "WRITE_ERRNOS", "WeightsError"]
