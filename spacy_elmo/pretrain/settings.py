"""Pretraining configuration: spaCy-style config files with dotted overrides.

A user's file is merged over `DEFAULT_CONFIG`, so it only needs what differs.
Every key is checked: a misspelt setting is an error naming the known ones,
never silently ignored.
"""
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Union

from thinc.api import Config

DEFAULT_CONFIG_STR = """
[paths]
train = null
dev = null
vocab = null
# start from this native model's weights with a fresh optimizer and schedule
# ("embedded": the package's own English biLM; null: from scratch)
init_from = null
# where tokenized corpora are cached (null: OUTPUT_DIR/corpus-cache)
cache = null

[corpus]
# spaCy language whose tokenizer splits the text
lang = "en"
# lines longer than this many tokens are cut into consecutive segments
max_length = 64
# stop reading the training files after this many segments (0: all)
max_segments = 0
# tokens of the dev file used for each evaluation (0: all)
dev_max_tokens = 50000

[vocab]
# softmax vocabulary: the most frequent words (specials included)
max_size = 50000
min_count = 1

[model]
lstm_dim = 512
projection_dim = 128
n_layers = 2
cell_clip = 3.0
proj_clip = 3.0
use_skip_connections = true
use_character_inputs = true
filters = [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 256], [7, 256]]
n_highway = 1
char_embedding_dim = 16
max_characters_per_token = 50
activation = "relu"
dropout = 0.1

[softmax]
# full, sampled (bilm-tf's, log-uniform negatives) or adaptive
kind = "sampled"
n_samples = 8192

[training]
seed = 0
# sentences: each segment from zero state (as the component reads);
# stream: bilm-tf's unrolled windows with state carried along
mode = "sentences"
batch_tokens = 4096
batch_size = 128
unroll_steps = 20
max_epochs = 10
# stop after this many optimizer steps / minutes (0: no limit)
max_steps = 0
max_minutes = 0
optimizer = "adagrad"
learning_rate = 0.2
# constant, linear (decay to 0 at max_steps) or cosine; warmup is linear
schedule = "constant"
warmup_steps = 0
# the first N steps train the softmax alone, the biLM held fixed: for runs that
# start (init_from) from a model without a softmax
softmax_warmup_steps = 0
grad_clip = 10.0
eval_every = 1000
checkpoint_every = 200
# torch threads (0: torch's default)
threads = 0
# float32, or bfloat16 / float16 autocast (CUDA)
precision = "float32"
"""

DEFAULT_CONFIG = Config().from_str(DEFAULT_CONFIG_STR)


class SettingsError(ValueError):
    """The pretraining config has an unknown, missing or invalid setting."""


def load_config(path: Optional[Union[str, Path]] = None, overrides: Optional[Dict[str, Any]] = None) -> Config:
    """Defaults, merged with the file at `path`, then with dotted `overrides`."""
    config = Config(DEFAULT_CONFIG)
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise SettingsError(f"config file not found: {path}")
        user = Config().from_disk(path, interpolate=False)
        _check_known(user, str(path))
        config = config.merge(user)
    if overrides:
        for dotted in overrides:
            section, _, key = dotted.partition(".")
            if section not in DEFAULT_CONFIG or key not in DEFAULT_CONFIG[section]:
                raise SettingsError(f"unknown override --{dotted}; known: {_known_list()}")
        config = Config(config).merge(Config(_nest(overrides)))
    config = config.interpolate()
    _check_values(config)
    return config


def _nest(overrides: Dict[str, Any]) -> Dict[str, Any]:
    nested: Dict[str, Dict[str, Any]] = {}
    for dotted, value in overrides.items():
        section, _, key = dotted.partition(".")
        nested.setdefault(section, {})[key] = value
    return nested


def _known_list() -> str:
    return ", ".join(f"{s}.{k}" for s in DEFAULT_CONFIG for k in DEFAULT_CONFIG[s])


def _check_known(user: Config, source: str) -> None:
    for section, values in user.items():
        if section not in DEFAULT_CONFIG:
            raise SettingsError(f"{source}: unknown section [{section}]; known: {sorted(DEFAULT_CONFIG)}")
        if not isinstance(values, dict):
            raise SettingsError(f"{source}: [{section}] must be a section")
        unknown = sorted(set(values) - set(DEFAULT_CONFIG[section]))
        if unknown:
            raise SettingsError(
                f"{source}: unknown setting(s) {unknown} in [{section}]; known: {sorted(DEFAULT_CONFIG[section])}"
            )


_CHOICES = {
    ("softmax", "kind"): ("full", "sampled", "adaptive"),
    ("training", "mode"): ("sentences", "stream"),
    ("training", "optimizer"): ("adagrad", "adam", "sgd"),
    ("training", "schedule"): ("constant", "linear", "cosine"),
    ("training", "precision"): ("float32", "bfloat16", "float16"),
}


def _check_values(config: Config) -> None:
    for (section, key), choices in _CHOICES.items():
        if config[section][key] not in choices:
            raise SettingsError(f"[{section}] {key} = {config[section][key]!r}; choose one of {choices}")
    for key in ("batch_tokens", "batch_size", "unroll_steps", "eval_every", "checkpoint_every"):
        if int(config["training"][key]) < 1:
            raise SettingsError(f"[training] {key} must be >= 1")
    if int(config["training"]["softmax_warmup_steps"]) < 0:
        raise SettingsError("[training] softmax_warmup_steps must be >= 0")
    if config["vocab"]["max_size"] < 4:
        raise SettingsError("[vocab] max_size must be >= 4 (three special tokens and a word)")
    if config["training"]["learning_rate"] <= 0:
        raise SettingsError("[training] learning_rate must be > 0")


@dataclass
class RunPaths:
    """Where a pretraining run writes."""

    root: Path

    @property
    def checkpoint(self) -> Path:
        return self.root / "checkpoint.pt"

    @property
    def model_last(self) -> Path:
        return self.root / "model-last"

    @property
    def model_best(self) -> Path:
        return self.root / "model-best"

    @property
    def log(self) -> Path:
        return self.root / "log.jsonl"

    @property
    def plot(self) -> Path:
        return self.root / "perplexity.png"

    @property
    def config(self) -> Path:
        return self.root / "config.cfg"

    @property
    def corpus_cache(self) -> Path:
        return self.root / "corpus-cache"


__all__ = ["DEFAULT_CONFIG", "DEFAULT_CONFIG_STR", "SettingsError", "load_config", "RunPaths"]
