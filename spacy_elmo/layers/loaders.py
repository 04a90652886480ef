"""Registered loaders that fill the biLM's weights at `nlp.initialize()`.

As spacy-curated-transformers does, the architecture builds the model and a
loader named under `[initialize.components.elmo]` fills it, so that the
`[components]` block of a config carries no path of one machine:

    [initialize.components.elmo.loader]
    @model_loaders = "spacy-elmo.SourceLoader.v1"
    source = "small"

Every loader that takes a path also takes any source `spacy_elmo.io.resolve_source`
accepts: an archive, an http(s) URL, "OPTIONS_URL WEIGHTS_URL" or a catalogue
name, fetched once into the download cache when the loader runs.

A loader is a function `(model, X=None, Y=None) -> model`. Where the model
was built with explicit `bilm` sizes, the loaded weights must have those
sizes; otherwise the model takes the loaded biLM's sizes. The loaders live in
thinc's `model_loaders` registry (created here if no other package did).
"""
import importlib
import importlib.util
from pathlib import Path
from typing import Callable, List, Optional, Union

from thinc.api import Model
from thinc.api import registry as thinc_registry

from ..bilm.model import BiLM
from ..io import WeightsError, find_published_files, is_native, load_model, load_native, load_published, resolve_source
from ..resources import DEFAULT_MODEL_DIR
from .bilm_model import get_bilm, has_bilm, set_bilm


def _ensure_registry() -> None:
    """thinc's `model_loaders` registry, shared with spacy-curated-transformers.

    That package creates the registry when it is imported and fails if it
    exists already, so where it is installed it is imported first.
    """
    if hasattr(thinc_registry, "model_loaders"):
        return
    if importlib.util.find_spec("spacy_curated_transformers") is not None:
        try:
            importlib.import_module("spacy_curated_transformers")
        except Exception:  # a broken install of it must not break this package
            pass
    if not hasattr(thinc_registry, "model_loaders"):
        thinc_registry.create("model_loaders", entry_points=True)


_ensure_registry()

Loader = Callable[..., Model]
PathLike = Union[str, Path]


@thinc_registry.model_loaders("spacy-elmo.EmbeddedLoader.v1")  # type: ignore[attr-defined]
def EmbeddedLoader(name: Optional[str] = None) -> Loader:
    """The biLM embedded in the package (`name`: a folder of `spacy_elmo/models`; default: the English one)."""
    directory = DEFAULT_MODEL_DIR if name is None else DEFAULT_MODEL_DIR.parent / name
    if not (directory / "elmo.json").is_file():
        available = sorted(p.name for p in DEFAULT_MODEL_DIR.parent.iterdir() if (p / "elmo.json").is_file())
        raise WeightsError(f"spacy-elmo.EmbeddedLoader.v1: no embedded model {name!r}; available: {available}")
    return _loader(lambda: load_native(directory, with_softmax=False).bilm, f"embedded model {directory.name}")


@thinc_registry.model_loaders("spacy-elmo.PublishedLoader.v1")  # type: ignore[attr-defined]
def PublishedLoader(path: PathLike) -> Loader:
    """A directory of published ELMo weights: `options.json` + `weights.hdf5` (+ `vocab.txt`)."""

    def read() -> BiLM:
        directory = _directory(path)
        options, weights, vocab = find_published_files(directory)
        return load_published(options, weights, vocab)

    return _loader(read, str(path))


@thinc_registry.model_loaders("spacy-elmo.NativeLoader.v1")  # type: ignore[attr-defined]
def NativeLoader(path: PathLike) -> Loader:
    """A directory in this package's format (`elmo.json` + `bilm.safetensors`), as `pretrain` writes it."""

    def read() -> BiLM:
        directory = _directory(path)
        if not is_native(directory):
            raise WeightsError(
                f"{directory}: no elmo.json; for options.json + weights.hdf5 use spacy-elmo.PublishedLoader.v1"
            )
        return load_native(directory, with_softmax=False).bilm

    return _loader(read, str(path))


@thinc_registry.model_loaders("spacy-elmo.SourceLoader.v1")  # type: ignore[attr-defined]
def SourceLoader(source: PathLike) -> Loader:
    """Any model source: a directory of any layout, an archive, a URL, "OPTIONS_URL WEIGHTS_URL" or a catalogue name."""
    return _loader(lambda: load_model(source, with_softmax=False).bilm, str(source))


def directory_loader(path: PathLike) -> Loader:
    """The loader for the component's `weights` setting: any model source (see `SourceLoader`)."""
    return SourceLoader(path)


def _directory(path: PathLike) -> Path:
    directory = resolve_source(path)
    if not directory.is_dir():
        raise WeightsError(f"{directory}: " + ("not a directory" if directory.exists() else "no such directory"))
    return directory


def _loader(read: Callable[[], BiLM], source: str) -> Loader:
    def load(model: Model, X=None, Y=None) -> Model:
        bilm = read()
        if has_bilm(model) and model.attrs.get("fresh"):
            _check_sizes(get_bilm(model), bilm, source)
        set_bilm(model, bilm)
        return model

    return load


_SHAPE_FIELDS = (
    "lstm_dim", "projection_dim", "n_layers", "use_character_inputs", "filters",
    "n_highway", "char_embedding_dim", "n_characters", "n_tokens_vocab", "characters",
    "word_table_rows", "word_table_dim", "word_table_specials",
)


def _check_sizes(built: BiLM, loaded: BiLM, source: str) -> None:
    """The sizes that decide the tensors' shapes must agree; the loaded biLM's other settings win."""
    expected, found = built.config.to_dict(), loaded.config.to_dict()
    differ: List[str] = [k for k in _SHAPE_FIELDS if expected[k] != found[k]]
    if differ:
        details = ", ".join(f"{k}: {expected[k]} in the config, {found.get(k)} in the weights" for k in differ)
        raise WeightsError(f"{source}: the weights do not fit the biLM sizes of the model block ({details})")


__all__ = ["EmbeddedLoader", "PublishedLoader", "NativeLoader", "SourceLoader", "directory_loader"]
