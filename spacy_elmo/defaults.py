"""The default of every setting that more than one place offers, each defined once.

The `elmo` factory's default config (pipeline/component.py), the signature
of `spacy-elmo.ElmoBiLM.v1` (layers/bilm_model.py), the segmentation helpers
(layers/segments.py), the per-doc cache (layers/doc_cache.py) and the
`embed` command (cli/embed.py) all read their defaults from here, so that a
default changes in one line and the places that offer it cannot disagree
(tests/test_defaults.py checks that they all read it from here).

The module imports nothing, so the command line and the layers can share it
without pulling in each other's dependencies.

Bulk embedding (`embed`, `BiLM.embed`) batches with its own, larger budget
(`EMBED_BATCH_TOKENS`, which `BiLM.embed` takes by default): it runs over whole files, where
taller products pay off, while the component's `batch_tokens` bounds the
memory of one `nlp.pipe` batch in a process that also runs other components.
"""
from typing import Any, Dict

# -- how a doc is cut into segments (layers/segments.py) --------------------------
MAX_WINDOW = 64  # most tokens of one window of whole sentences, for docs without sentence boundaries
MAX_LENGTH = 256  # most tokens the biLM reads from one zero state
STRIDE = 192  # step between overlapping windows of a sentence longer than MAX_LENGTH
SEGMENTATION = "auto"  # sentences where the doc has them, else windows
SKIP_WHITESPACE = True  # whitespace tokens stay out of the biLM's input (zero vectors)

# -- how the biLM computes and what it keeps --------------------------------------
BATCH_TOKENS = 4096  # padded tokens per biLM batch in the component
TOKEN_CACHE_SIZE = 50_000  # context-free token vectors kept across batches (0: off)
DOC_CACHE_BYTES = 1 << 30  # 1 GiB of layers a frozen biLM keeps between training epochs (0: off)
MIXED_PRECISION = False  # autocast on CUDA
BACKEND = "auto"  # the best backend available on the machine that runs the model
SEED = 0  # seed of the random weights of a biLM built from explicit sizes

# -- the component ------------------------------------------------------------------
THREADS = 0  # torch's own thread setting (spacy_elmo/threads.py)

ARCHITECTURE = "spacy-elmo.ElmoBiLM.v1"


def model_settings() -> Dict[str, Any]:
    """The settings of the factory's default `[components.elmo.model]` block, in the order it lists them."""
    return {
        "max_window": MAX_WINDOW,
        "max_length": MAX_LENGTH,
        "stride": STRIDE,
        "segmentation": SEGMENTATION,
        "skip_whitespace": SKIP_WHITESPACE,
        "batch_tokens": BATCH_TOKENS,
        "token_cache_size": TOKEN_CACHE_SIZE,
        "doc_cache_bytes": DOC_CACHE_BYTES,
        "mixed_precision": MIXED_PRECISION,
        "backend": BACKEND,
    }


__all__ = [
    "ARCHITECTURE",
    "BACKEND",
    "BATCH_TOKENS",
    "DOC_CACHE_BYTES",
    "MAX_LENGTH",
    "MAX_WINDOW",
    "MIXED_PRECISION",
    "SEED",
    "SEGMENTATION",
    "SKIP_WHITESPACE",
    "STRIDE",
    "THREADS",
    "TOKEN_CACHE_SIZE",
    "model_settings",
]
