"""Errors raised when a weight directory cannot be read or written."""


class WeightsError(ValueError):
    """A weight file is missing, unreadable, corrupted, or disagrees with its options.

    The message always names the file and, where one is to blame, the dataset.
    """


__all__ = ["WeightsError"]
