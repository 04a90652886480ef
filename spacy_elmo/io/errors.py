"""Errors raised when a weight directory cannot be read or written."""
from ..bilm.errors import SpacyElmoError


class WeightsError(SpacyElmoError, ValueError):
    """A weight file is missing, unreadable, corrupted, or disagrees with its options.

    The message always names the file and, where one is to blame, the dataset.
    """


class DamagedFileError(WeightsError):
    """A file whose bytes are not those that were written: a checksum mismatch, a file cut short or
    unreadable as its format, a listed file gone. A fresh copy fixes it (for a cached download:
    `download --force`); a model this version refuses for its contents is a plain WeightsError."""


__all__ = ["DamagedFileError", "WeightsError"]
