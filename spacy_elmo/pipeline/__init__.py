"""The `elmo` spaCy component and its Doc/Span/Token extensions."""
from .component import Elmo, ElmoNotReady, make_elmo
from .extensions import (
    ExtensionConflict,
    RetokenizedError,
    get_doc_layers,
    get_doc_mixed,
    has_elmo,
    mix_layers,
    mixed_vectors,
    register_extensions,
    set_doc_layers,
    set_doc_mixed,
    set_vector_hooks,
)
from .treebank_tokenizer import TreebankTokenizer, TreebankTokenizerFactory

__all__ = [
    "Elmo",
    "ElmoNotReady",
    "ExtensionConflict",
    "RetokenizedError",
    "make_elmo",
    "get_doc_layers",
    "get_doc_mixed",
    "has_elmo",
    "mix_layers",
    "mixed_vectors",
    "register_extensions",
    "set_doc_layers",
    "set_doc_mixed",
    "set_vector_hooks",
    "TreebankTokenizer",
    "TreebankTokenizerFactory",
]
