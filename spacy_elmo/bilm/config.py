"""The biLM's hyper-parameters, and their mapping to the published `options.json`.

One frozen dataclass describes every architecture this package can build: the
published ELMo models (character CNN + projected LSTMs), bilm-tf's word-input
variant, and models trained with `spacy_elmo pretrain`. The published options
file is parsed strictly: a typo'd key is an error, not a silently ignored
setting.
"""
from dataclasses import asdict, dataclass, replace
from typing import Any, Dict, Optional, Tuple

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


class OptionsError(ValueError):
    """options.json (or a native config) does not describe a valid biLM."""


@dataclass(frozen=True)
class BiLMConfig:
    """Architecture of a biLM.

    `filters` is a list of (width, n_filters) pairs for the character CNN.
    `use_character_inputs = False` selects a word-embedding token encoder of
    `n_tokens_vocab` rows instead (bilm-tf's option of the same name).

    `characters`: what the character CNN reads, "bytes" (the published
    models: UTF-8 bytes, `n_characters` 261 or 262) or "dictionary" (a
    character vocabulary of `n_characters` entries, as ELMoForManyLangs).

    A word table (`word_table_dim > 0`) joins the character CNN in the token
    layer: x_k = projection([highway(char CNN(w_k)); v(w_k)]), where v(w) is a
    row of a table of `word_table_rows` vectors (pretrained, frozen unless
    `word_table_trainable`) or one of `word_table_specials` learned rows
    (sentence boundaries, unknown words). Without a table the token layer is
    the published one.
    """

    # contextual layers
    lstm_dim: int = 4096
    projection_dim: int = 512
    n_layers: int = 2
    cell_clip: Optional[float] = 3.0
    proj_clip: Optional[float] = 3.0
    use_skip_connections: bool = True
    # token encoder
    use_character_inputs: bool = True
    filters: Tuple[Tuple[int, int], ...] = (
        (1, 32),
        (2, 32),
        (3, 64),
        (4, 128),
        (5, 256),
        (6, 512),
        (7, 1024),
    )
    n_highway: int = 2
    char_embedding_dim: int = 16
    n_characters: int = 262
    max_characters_per_token: int = 50
    activation: str = "relu"
    n_tokens_vocab: int = 0
    characters: str = "bytes"
    # word table beside the character CNN
    word_table_rows: int = 0
    word_table_dim: int = 0
    word_table_specials: int = 0
    word_table_trainable: bool = False
    # training
    dropout: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "filters", tuple((int(w), int(n)) for w, n in self.filters))
        problems = []
        for name in ("lstm_dim", "projection_dim", "n_layers"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.use_character_inputs:
            if not self.filters:
                problems.append("the character CNN needs at least one (width, n_filters) pair")
            for width, n in self.filters:
                if width < 1 or n < 1:
                    problems.append(f"invalid filter ({width}, {n}): width and count must be >= 1")
                if width > self.max_characters_per_token:
                    problems.append(
                        f"filter width {width} exceeds max_characters_per_token "
                        f"{self.max_characters_per_token}"
                    )
            if self.characters not in ("bytes", "dictionary"):
                problems.append(f"characters must be 'bytes' or 'dictionary', got {self.characters!r}")
            elif self.characters == "bytes" and self.n_characters not in (261, 262):
                problems.append(f"n_characters must be 261 or 262 for byte inputs, got {self.n_characters}")
            elif self.characters == "dictionary" and self.n_characters < 1:
                problems.append("a character dictionary needs n_characters >= 1")
            if self.max_characters_per_token < 3:
                problems.append("max_characters_per_token must be >= 3 (begin, one byte, end)")
            if self.activation not in ("relu", "tanh"):
                problems.append(f"activation must be 'relu' or 'tanh', got {self.activation!r}")
            if self.n_highway < 0:
                problems.append("n_highway must be >= 0")
        elif self.n_tokens_vocab < 1:
            problems.append("a word-input biLM (use_character_inputs = false) needs n_tokens_vocab >= 1")
        problems.extend(self._word_table_problems())
        if not 0.0 <= self.dropout < 1.0:
            problems.append(f"dropout must be in [0, 1), got {self.dropout}")
        if problems:
            raise OptionsError("Invalid biLM configuration: " + "; ".join(problems))

    def _word_table_problems(self) -> list:
        sizes = (self.word_table_rows, self.word_table_dim, self.word_table_specials)
        if min(sizes) < 0:
            return [f"word table sizes must be >= 0, got rows/dim/specials {sizes}"]
        if self.word_table_dim == 0:
            if self.word_table_rows or self.word_table_specials:
                return ["word_table_rows / word_table_specials are set but word_table_dim is 0"]
            return []
        if not self.use_character_inputs:
            return ["a word table joins the character CNN; a word-input biLM (use_character_inputs = false) has none"]
        if self.word_table_rows + self.word_table_specials < 1:
            return ["a word table needs at least one row (word_table_rows + word_table_specials >= 1)"]
        return []

    @property
    def has_word_table(self) -> bool:
        return self.word_table_dim > 0

    @property
    def n_filters(self) -> int:
        return sum(n for _, n in self.filters)

    @property
    def width(self) -> int:
        """Width of every output layer: forward and backward concatenated."""
        return 2 * self.projection_dim

    @property
    def n_output_layers(self) -> int:
        """L + 1: the token layer plus one per LSTM layer."""
        return self.n_layers + 1

    def replace(self, **changes: Any) -> "BiLMConfig":
        return replace(self, **changes)

    # -- native form: a flat, JSON-friendly dict ---------------------------------
    def to_dict(self) -> Dict[str, Any]:
        data = asdict(self)
        data["filters"] = [list(f) for f in self.filters]
        return data

    @classmethod
    def from_dict(cls, data: Dict[str, Any], source: str = "config") -> "BiLMConfig":
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise OptionsError(f"{source}: unknown biLM setting(s) {unknown}; known: {sorted(known)}")
        try:
            return cls(**data)
        except TypeError as err:  # wrong value types
            raise OptionsError(f"{source}: {err}") from None

    # -- published form: options.json ----------------------------------------------
    @classmethod
    def from_options(cls, options: Dict[str, Any], source: str = "options.json") -> "BiLMConfig":
        """Parse a published ELMo / bilm-tf options dict."""
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
            lstm_dim=_int(lstm, "dim", source),
            projection_dim=_int(lstm, "projection_dim", source),
            n_layers=_int(lstm, "n_layers", source),
            cell_clip=lstm.get("cell_clip"),
            proj_clip=lstm.get("proj_clip"),
            use_skip_connections=bool(lstm.get("use_skip_connections", False)),
        )
        if char_cnn is None:
            if "n_tokens_vocab" not in options:
                raise OptionsError(
                    f"{source}: neither 'char_cnn' (character inputs) nor 'n_tokens_vocab' "
                    "(word inputs) is given, so the token encoder is unknown"
                )
            kwargs.update(use_character_inputs=False, n_tokens_vocab=_int(options, "n_tokens_vocab", source))
        else:
            _check_keys(
                char_cnn,
                _CHAR_CNN_KEYS,
                {"embedding", "filters", "n_highway", "max_characters_per_token"},
                f"{source} [char_cnn]",
            )
            embedding = char_cnn["embedding"]
            if not isinstance(embedding, dict) or "dim" not in embedding:
                raise OptionsError(f"{source} [char_cnn]: 'embedding' must be an object with a 'dim'")
            filters = char_cnn["filters"]
            if not isinstance(filters, list) or not all(
                isinstance(f, (list, tuple)) and len(f) == 2 for f in filters
            ):
                raise OptionsError(f"{source} [char_cnn]: 'filters' must be a list of [width, n_filters] pairs")
            kwargs.update(
                filters=tuple(tuple(f) for f in filters),
                n_highway=_int(char_cnn, "n_highway", source),
                char_embedding_dim=_int(embedding, "dim", source),
                n_characters=int(char_cnn.get("n_characters", 262)),
                max_characters_per_token=_int(char_cnn, "max_characters_per_token", source),
                activation=char_cnn.get("activation", "tanh"),
            )
        try:
            return cls(**kwargs)
        except OptionsError as err:
            raise OptionsError(f"{source}: {err}") from None

    def to_options(self) -> Dict[str, Any]:
        """The published options.json form (inference layout, n_characters 262)."""
        options: Dict[str, Any] = {
            "lstm": {
                "dim": self.lstm_dim,
                "projection_dim": self.projection_dim,
                "n_layers": self.n_layers,
                "cell_clip": self.cell_clip,
                "proj_clip": self.proj_clip,
                "use_skip_connections": self.use_skip_connections,
            }
        }
        if self.has_word_table or self.characters != "bytes":
            raise OptionsError(
                "the published format (options.json + weights.hdf5) has no place for "
                + ("a word table" if self.has_word_table else "a character dictionary")
                + "; save this model in the native format (spacy_elmo.io.save_native, or `convert --to native`)"
            )
        if self.use_character_inputs:
            options["char_cnn"] = {
                "embedding": {"dim": self.char_embedding_dim},
                "filters": [list(f) for f in self.filters],
                "n_highway": self.n_highway,
                "n_characters": 262,
                "max_characters_per_token": self.max_characters_per_token,
                "activation": self.activation,
            }
        else:
            options["n_tokens_vocab"] = self.n_tokens_vocab
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


def _int(section: Dict[str, Any], key: str, source: str) -> int:
    value = section[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value:
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


__all__ = ["BiLMConfig", "OptionsError", "published_shapes", "SMALL_SHAPES", "ORIGINAL_SHAPES"]
