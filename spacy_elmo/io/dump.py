"""The `embed` dump's old home: bulk embedding lives in `spacy_elmo.embedding.dump`.

Kept so that `from spacy_elmo.io.dump import embed_file` goes on working;
the names are the same objects.
"""
from ..embedding.dump import *  # noqa: F401,F403
from ..embedding.dump import __all__, _DatasetWriter  # noqa: F401
