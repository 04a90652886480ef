"""The base of every error class this package defines, so that callers can catch them all at once.

    try:
        nlp.add_pipe("elmo", config={"weights": path})(doc)
    except spacy_elmo.SpacyElmoError as err:
        ...

(Wrong arguments to a function, such as an array of the wrong shape, stay plain ValueErrors and
TypeErrors, as in numpy and PyTorch.) Each error class also keeps the built-in type it always had
(most are ValueErrors; `CheckpointError` a RuntimeError, `SpacyRequired` an ImportError), so
existing `except ValueError` code still catches them. It lives in `bilm/`, the bottom layer, so
that every layer can use it (DESIGN.md).
"""


class SpacyElmoError(Exception):
    """An error spacy-elmo raised on purpose: its message says what is wrong and, where it can, what to do."""


__all__ = ["SpacyElmoError"]
