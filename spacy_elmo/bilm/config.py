"""The biLM's hyper-parameters: one frozen dataclass for every architecture this package builds.

Invalid combinations raise `OptionsError` listing every problem; the
published `options.json` form is a weight-format concern (`io/options.py`).
"""
import math
import numbers
from dataclasses import asdict, dataclass
from typing import Any, Dict, Optional, Tuple

import numpy

from .errors import SpacyElmoError


class OptionsError(SpacyElmoError, ValueError):
    """options.json (or a native config) does not describe a valid biLM."""


MAX_LAYERS = 64  # LSTM or highway layers: published models have at most 4
MAX_CHARACTERS_PER_TOKEN = 4096  # published models read 50 (longer tokens are cut)


@dataclass(frozen=True)
class BiLMConfig:
    """Architecture of a biLM.

    `filters`: (width, n_filters) pairs of the character CNN, which reads
    `characters` "bytes" (the published models) or a "dictionary" of
    `n_characters` entries (ELMoForManyLangs). `use_character_inputs = False`:
    a word embedding of `n_tokens_vocab` rows instead (bilm-tf's option).
    A word table (`word_table_dim > 0`) joins the character CNN:
    x_k = projection([highway(char CNN(w_k)); v(w_k)]), v(w) one of
    `word_table_rows` pretrained vectors (frozen unless `word_table_trainable`)
    or of `word_table_specials` learned rows (boundaries, unknown words).
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
    filters: Tuple[Tuple[int, int], ...] = ((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024))
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
        type_problems = self._normalise_types()
        if type_problems:  # the checks below compare values, which needs the right types
            raise OptionsError("Invalid biLM configuration: " + "; ".join(type_problems))
        problems = []
        for name in ("lstm_dim", "projection_dim", "n_layers"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be >= 1, got {getattr(self, name)}")
        # counts no weight shape checks: an edited options or elmo.json (10**6 layers, 10**9 characters) built
        # a model for minutes and gigabytes, or ran out of memory, before the weights could be compared
        for name, most in (("n_layers", MAX_LAYERS), ("n_highway", MAX_LAYERS),
                           ("max_characters_per_token", MAX_CHARACTERS_PER_TOKEN)):
            if getattr(self, name) > most:
                problems.append(f"{name} must be at most {most:,}, got {getattr(self, name):,}")
        if self.use_character_inputs:
            if not self.filters:
                problems.append("the character CNN needs at least one (width, n_filters) pair")
            for width, n in self.filters:
                if width < 1 or n < 1:
                    problems.append(f"invalid filter ({width}, {n}): width and count must be >= 1")
                if width > self.max_characters_per_token:
                    problems.append(f"filter width {width} exceeds max_characters_per_token "
                                    f"{self.max_characters_per_token}")
            if self.characters not in ("bytes", "dictionary"):
                problems.append(f"characters must be 'bytes' or 'dictionary', got {self.characters!r}")
            elif self.characters == "bytes" and self.n_characters not in (261, 262):
                problems.append(f"n_characters must be 261 or 262 for byte inputs, got {self.n_characters}")
            elif self.characters == "dictionary" and self.n_characters < 1:
                problems.append("a character dictionary needs n_characters >= 1")
            if self.char_embedding_dim < 1:
                problems.append(f"char_embedding_dim must be >= 1, got {self.char_embedding_dim}")
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

    def _normalise_types(self) -> list:
        """Integers as int (an integral float such as 512.0, or a numpy integer, is accepted), flags as
        bool, clips as None or a float >= 0 (0, like None, clips nothing), filters as (int, int) pairs;
        the problems found, or []. Values come from JSON and config files, so a string or a list
        where a number belongs must be an error, not a crash later."""
        problems = []

        def number(value: Any) -> bool:
            return isinstance(value, numbers.Real) and not isinstance(value, (bool, numpy.bool_))

        def integer(value: Any) -> Optional[int]:
            if not number(value) or not math.isfinite(value) or int(value) != value:
                return None
            return int(value)

        for name in _INT_FIELDS:
            value = integer(getattr(self, name))
            if value is None:
                problems.append(f"{name} must be an integer, got {getattr(self, name)!r}")
            else:
                object.__setattr__(self, name, value)
        for name in _BOOL_FIELDS:
            value = getattr(self, name)
            if isinstance(value, (bool, numpy.bool_)) or (integer(value) in (0, 1) and value in (0, 1)):
                object.__setattr__(self, name, bool(value))  # JSON writers that spell flags 0 / 1 too
            else:
                problems.append(f"{name} must be true or false, got {value!r}")
        for name in ("cell_clip", "proj_clip"):
            value = getattr(self, name)
            if value is None:
                continue
            if not number(value) or not 0 <= value < float("inf"):
                problems.append(f"{name} must be a number >= 0 or null (0 and null: no clipping), got {value!r}")
            else:
                object.__setattr__(self, name, float(value))
        if not number(self.dropout) or not math.isfinite(self.dropout):
            problems.append(f"dropout must be a number, got {self.dropout!r}")
        elif isinstance(self.dropout, numpy.generic):  # a numpy scalar: as JSON writes it
            object.__setattr__(self, "dropout", float(self.dropout))
        for name in ("activation", "characters"):
            if not isinstance(getattr(self, name), str):
                problems.append(f"{name} must be a string, got {getattr(self, name)!r}")
        try:
            pairs = [(integer(w), integer(n)) for w, n in self.filters]
        except (TypeError, ValueError):
            pairs = [(None, None)]
        if any(w is None or n is None for w, n in pairs):
            problems.append(f"filters must be [width, n_filters] pairs of integers, got {self.filters!r}")
        else:
            object.__setattr__(self, "filters", tuple(pairs))
        return problems

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

    # -- native form: a flat, JSON-friendly dict ---------------------------------
    def to_dict(self) -> Dict[str, Any]:
        data = asdict(self)
        data["filters"] = [list(f) for f in self.filters]
        return data

    @classmethod
    def from_dict(cls, data: Dict[str, Any], source: str = "config") -> "BiLMConfig":
        """The config `to_dict` wrote (a native model's elmo.json, a serialized pipeline). Every setting
        it has always written is required: a default in place of a missing one (tanh for relu, no
        clipping for 3.0) loaded without a word and moved the vectors by up to thousands."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise OptionsError(f"{source}: unknown biLM setting(s) {unknown}; known: {sorted(known)}")
        missing = [name for name in cls.__dataclass_fields__ if name not in data and name not in _ADDED_SETTINGS]
        if missing:
            raise OptionsError(
                f"{source}: missing biLM setting(s) {missing} (the file was edited or cut: every model "
                "this package writes has them)"
            )
        try:
            return cls(**data)
        except TypeError as err:  # a missing or unexpected argument
            raise OptionsError(f"{source}: {err}") from None
        except OptionsError as err:  # invalid values: name the file they came from
            raise OptionsError(f"{source}: {err}") from None


_INT_FIELDS = (
    "lstm_dim", "projection_dim", "n_layers", "n_highway", "char_embedding_dim", "n_characters",
    "max_characters_per_token", "n_tokens_vocab", "word_table_rows", "word_table_dim", "word_table_specials",
)
_BOOL_FIELDS = ("use_skip_connections", "use_character_inputs", "word_table_trainable")
# settings that models written before them lack, which the defaults describe exactly (no word table,
# byte characters); dropout only trains
_ADDED_SETTINGS = (
    "characters", "word_table_rows", "word_table_dim", "word_table_specials", "word_table_trainable", "dropout",
)


__all__ = ["BiLMConfig", "OptionsError"]
