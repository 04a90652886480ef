"""Bulk embedding: many sentences through a biLM into files that other tools read.

* `dump`: the local engine and its outputs: the published HDF5 dump layout
  (one dataset per input unit, `sentence_to_index`) or Parquet parts
  (`parquet`), sharding, crash-safe resume;
* `inputs`: what is read: text, JSONL, CoNLL-U and `.spacy` files, globs and
  fsspec URLs, and how a run's files are shared between shards;
* `ray`: the same run on Ray Data (`embed --engine ray`), and
  `embed_dataset` for an existing Ray Dataset (needs `spacy-elmo[ray]`).

This is an application layer: it uses the biLM and the weight formats, and
imports spaCy only to read spaCy's formats or tokenize text.
"""
from .dump import LAYER_MODES, OUTPUT_FORMATS, DumpError, combine_layers, embed_file, join_shards, read_dump
from .inputs import FORMATS, expand_inputs, read_units

__all__ = [
    "FORMATS", "LAYER_MODES", "OUTPUT_FORMATS", "DumpError", "combine_layers", "embed_file", "expand_inputs",
    "join_shards", "read_dump", "read_units",
]
