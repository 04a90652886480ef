"""bilm-tf's `options.json`: the architecture half of the published format, to and from a `BiLMConfig`.

The file is parsed strictly: a typo'd key is an error, not a silently ignored
setting. bilm-tf's training bookkeeping keys are accepted and ignored, since
they do not change the network. `published_shapes` gives the shapes of the
published "small" and "original" models.
"""
import math
from typing import Any, Dict, Optional

from ..bilm.config import BiLMConfig, OptionsError

# Keys bilm-tf writes into options.json for training bookkeeping. They do not
# change the network, so they are accepted and ignored.
_TRAINING_ONLY_KEYS = {
    "bidirectional",
    "dropout",
    "all_clip_norm_val",
    "n_epochs",
    "n_train_tokens",
    "batch_size",
    "n_tokens_vocab",
    "unroll_steps",
    "n_negative_samples_batch",
    "sample_softmax",
}
_LSTM_KEYS = {"dim", "projection_dim", "n_layers", "cell_clip", "proj_clip", "use_skip_connections"}
_CHAR_CNN_KEYS = {
    "embedding",
    "filters",
    "n_highway",
    "n_characters",
    "max_characters_per_token",
    "activation",
}


def config_from_options(options: Dict[str, Any], source: str = "options.json") -> BiLMConfig:
    """Parse a published ELMo / bilm-tf options dict; `source` names it in errors (`OptionsError`)."""
    if not isinstance(options, dict):
        raise OptionsError(f"{source}: expected a JSON object, got {type(options).__name__}")
    unknown = sorted(set(options) - {"lstm", "char_cnn"} - _TRAINING_ONLY_KEYS)
    if unknown:
        raise OptionsError(
            f"{source}: unknown top-level key(s) {unknown}; expected 'lstm', 'char_cnn' "
            f"and optionally bilm-tf's training keys {sorted(_TRAINING_ONLY_KEYS)}"
        )
    lstm = _section(options, "lstm", source, required=True)
    assert lstm is not None  # required: _section raised otherwise
    _check_keys(lstm, _LSTM_KEYS, {"dim", "projection_dim", "n_layers"}, f"{source} [lstm]")
    char_cnn = _section(options, "char_cnn", source, required=False)
    kwargs: Dict[str, Any] = dict(
        lstm_dim=integer_setting(lstm, "dim", source),
        projection_dim=integer_setting(lstm, "projection_dim", source),
        n_layers=integer_setting(lstm, "n_layers", source),
        cell_clip=lstm.get("cell_clip"),
        proj_clip=lstm.get("proj_clip"),
        use_skip_connections=lstm.get("use_skip_connections", False),
    )
    if char_cnn is None:
        if "n_tokens_vocab" not in options:
            raise OptionsError(
                f"{source}: neither 'char_cnn' (character inputs) nor 'n_tokens_vocab' "
                "(word inputs) is given, so the token encoder is unknown"
            )
        kwargs.update(use_character_inputs=False, n_tokens_vocab=integer_setting(options, "n_tokens_vocab", source))
    else:
        kwargs.update(_char_cnn_settings(char_cnn, source))
    try:
        return BiLMConfig(**kwargs)
    except OptionsError as err:
        raise OptionsError(f"{source}: {err}") from None


def _char_cnn_settings(char_cnn: Dict[str, Any], source: str) -> Dict[str, Any]:
    _check_keys(
        char_cnn,
        _CHAR_CNN_KEYS,
        # activation too: bilm-tf and AllenNLP read it without a default, and a guess (tanh for a relu
        # model, as every published one is) loaded without a word and moved the vectors by up to 2.9
        {"embedding", "filters", "n_highway", "max_characters_per_token", "activation"},
        f"{source} [char_cnn]",
    )
    embedding = char_cnn["embedding"]
    if not isinstance(embedding, dict) or "dim" not in embedding:
        raise OptionsError(f"{source} [char_cnn]: 'embedding' must be an object with a 'dim'")
    filters = char_cnn["filters"]
    if not isinstance(filters, list) or not all(isinstance(f, (list, tuple)) and len(f) == 2 for f in filters):
        raise OptionsError(f"{source} [char_cnn]: 'filters' must be a list of [width, n_filters] pairs")
    return dict(
        filters=tuple(tuple(f) for f in filters),
        n_highway=integer_setting(char_cnn, "n_highway", source),
        char_embedding_dim=integer_setting(embedding, "dim", source),
        n_characters=char_cnn.get("n_characters", 262),  # BiLMConfig checks its type
        max_characters_per_token=integer_setting(char_cnn, "max_characters_per_token", source),
        activation=char_cnn["activation"],
    )


def config_to_options(config: BiLMConfig) -> Dict[str, Any]:
    """The published options.json form (inference layout, n_characters 262).

    A word table or a character dictionary has no place in the published
    format: `OptionsError`, so that callers refuse before writing anything.
    """
    if config.has_word_table or config.characters != "bytes":
        raise OptionsError(
            "the published format (options.json + weights.hdf5) has no place for "
            + ("a word table" if config.has_word_table else "a character dictionary")
            + "; save this model in the native format (spacy_elmo.io.save_native, or `convert --to native`)"
        )
    options: Dict[str, Any] = {
        "lstm": {
            "dim": config.lstm_dim,
            "projection_dim": config.projection_dim,
            "n_layers": config.n_layers,
            "cell_clip": config.cell_clip,
            "proj_clip": config.proj_clip,
            "use_skip_connections": config.use_skip_connections,
        }
    }
    if config.use_character_inputs:
        options["char_cnn"] = {
            "embedding": {"dim": config.char_embedding_dim},
            "filters": [list(f) for f in config.filters],
            "n_highway": config.n_highway,
            "n_characters": 262,
            "max_characters_per_token": config.max_characters_per_token,
            "activation": config.activation,
        }
    else:
        options["n_tokens_vocab"] = config.n_tokens_vocab
    return options


def _section(options: Dict[str, Any], key: str, source: str, required: bool) -> Optional[Dict[str, Any]]:
    if key not in options:
        if required:
            raise OptionsError(f"{source}: missing required section '{key}'")
        return None
    value = options[key]
    if not isinstance(value, dict):
        raise OptionsError(f"{source}: '{key}' must be an object, got {type(value).__name__}")
    return value


def _check_keys(section: Dict[str, Any], known: set, required: set, where: str) -> None:
    unknown = sorted(set(section) - known)
    if unknown:
        raise OptionsError(f"{where}: unknown key(s) {unknown}; known keys: {sorted(known)}")
    missing = sorted(required - set(section))
    if missing:
        raise OptionsError(f"{where}: missing required key(s) {missing}")


def integer_setting(section: Dict[str, Any], key: str, source: str) -> int:
    """section[key] as an int: a whole number (an int, or a float such as 2.0), never a bool, a string or
    1.7 (which int() would truncate into another model), else an OptionsError naming the key."""
    value = section[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or int(value) != value:
        raise OptionsError(f"{source}: '{key}' must be an integer, got {value!r}")
    return int(value)


SMALL_SHAPES: Dict[str, Any] = dict(
    lstm_dim=1024,
    projection_dim=128,
    n_layers=2,
    filters=((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024)),
    n_highway=1,
)
"""The published "small" ELMo shapes (elmo_2x1024_128_2048cnn_1xhighway)."""

ORIGINAL_SHAPES: Dict[str, Any] = dict(
    lstm_dim=4096,
    projection_dim=512,
    n_layers=2,
    filters=((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024)),
    n_highway=2,
)
"""The published "original" ELMo shapes (elmo_2x4096_512_2048cnn_2xhighway)."""


def published_shapes(name: str) -> BiLMConfig:
    """A config with the shapes of a published model: 'small' or 'original'."""
    shapes = {"small": SMALL_SHAPES, "original": ORIGINAL_SHAPES}
    if name not in shapes:
        raise ValueError(f"unknown published shape {name!r}; choose from {sorted(shapes)}")
    return BiLMConfig(**shapes[name])


__all__ = ["config_from_options", "config_to_options", "published_shapes", "SMALL_SHAPES", "ORIGINAL_SHAPES",
           "integer_setting"]
