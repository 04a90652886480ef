"""Registered loaders: the only way weights arrive in a biLM model.

As spacy-curated-transformers does, the architecture builds the model and a
loader fills it, so that the `[components]` block of a config carries no
path of one machine:

    [initialize.components.elmo.loader]
    @model_loaders = "spacy-elmo.SourceLoader.v1"
    source = "small"

A loader is a `WeightsLoader`: called as `loader(model)` it fills a
`spacy-elmo.ElmoBiLM.v1` model (thinc's loader signature `(model, X=None,
Y=None) -> model`); `loader.read(with_softmax)` gives the model it reads as
a `spacy_elmo.io.NativeModel`, which is how the commands get theirs.
`resolve_loader(weights)` is the one function that turns a `weights`
setting (the component's, `[initialize.components.elmo] weights`, a
command's `--weights`) into a loader: None is the embedded English model, a
string any source `spacy_elmo.io.resolve_source` accepts (a directory of any
layout, an archive, an http(s) URL, "OPTIONS_URL WEIGHTS_URL" or a catalogue
name, fetched once into the download cache when the loader runs), and a
loader is itself.

Where the model was built with explicit `bilm` sizes, the loaded weights
must have those sizes; otherwise the model takes the loaded biLM's sizes.
`ensure_weights(model)` runs the model's own loader (the one the component
set from its `weights`) unless the model holds a biLM already: the
component calls it before its first prediction, which is why
`nlp.add_pipe("elmo"); nlp(text)` works without `nlp.initialize()`, and why
a pipeline loaded from disk, whose biLM comes from its files, never runs it.
The thinc forward itself reads no file.

The loaders live in thinc's `model_loaders` registry (created here if no
other package did).
"""
import importlib
import importlib.util
import os
import threading
import weakref
from functools import partial
from pathlib import Path
from typing import Any, Callable, List, Optional, Union

from thinc.api import Model
from thinc.api import registry as thinc_registry

from ..bilm.model import BiLM
from ..io import (
    NativeModel,
    WeightsError,
    find_published_files,
    is_native,
    load_model,
    load_native,
    load_published,
    not_native_reason,
    resolve_source,
)
from ..io.layouts import layouts_in
from ..io.sources import fetch_again_hint
from ..resources import DEFAULT_MODEL_DIR, default_model_path

LOADER_ATTR = "loader"  # where a biLM model keeps the loader its component set


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

PathLike = Union[str, Path]


class WeightsLoader:
    """A loader: reads one model (`read`) and fills a biLM model with it (calling it).

    `read` is a module-level function (or a partial of one), so that the
    loader, which a component's model keeps, pickles with the pipeline.
    """

    def __init__(self, read: Callable[..., NativeModel], source: str, weights: Optional[str] = None) -> None:
        self._read = read
        self.source = source
        self.weights = weights  # the `weights` setting that names the same model (None: the embedded one)

    def read(self, with_softmax: bool = False) -> NativeModel:
        """The model this loader names (its softmax and vocabulary only where asked and present)."""
        return self._read(with_softmax=with_softmax)

    def __call__(self, model: Model, X: Optional[Any] = None, Y: Optional[Any] = None) -> Model:
        from .bilm_model import get_bilm, has_bilm, set_bilm  # bilm_model imports this module

        bilm = self.read().bilm
        if has_bilm(model) and model.attrs.get("fresh"):
            _check_sizes(get_bilm(model), bilm, self.source)
        set_bilm(model, bilm)
        return model

    def __repr__(self) -> str:
        return f"<WeightsLoader {self.source}>"


Loader = Callable[..., Model]
WeightsSetting = Union[None, str, Path, Loader]


@thinc_registry.model_loaders("spacy-elmo.EmbeddedLoader.v1")  # type: ignore[attr-defined]
def EmbeddedLoader(name: Optional[str] = None) -> WeightsLoader:
    """The biLM embedded in the package (`name`: a folder of `spacy_elmo/models`; default: the English one)."""
    if name is not None and not (DEFAULT_MODEL_DIR.parent / name / "elmo.json").is_file():
        available = sorted(p.name for p in DEFAULT_MODEL_DIR.parent.iterdir() if (p / "elmo.json").is_file())
        raise WeightsError(f"spacy-elmo.EmbeddedLoader.v1: no embedded model {name!r}; available: {available}")
    weights = None if name in (None, DEFAULT_MODEL_DIR.name) else str(DEFAULT_MODEL_DIR.parent / name)
    return WeightsLoader(partial(_read_embedded, name), f"embedded model {name or DEFAULT_MODEL_DIR.name}", weights)


@thinc_registry.model_loaders("spacy-elmo.PublishedLoader.v1")  # type: ignore[attr-defined]
def PublishedLoader(path: PathLike) -> WeightsLoader:
    """A directory of published ELMo weights: `options.json` + `weights.hdf5` (+ `vocab.txt`)."""
    return WeightsLoader(partial(_read_published, path), str(path), str(path))


@thinc_registry.model_loaders("spacy-elmo.NativeLoader.v1")  # type: ignore[attr-defined]
def NativeLoader(path: PathLike) -> WeightsLoader:
    """A directory in this package's format (`elmo.json` + `bilm.safetensors`), as `pretrain` writes it."""
    return WeightsLoader(partial(_read_native, path), str(path), str(path))


@thinc_registry.model_loaders("spacy-elmo.SourceLoader.v1")  # type: ignore[attr-defined]
def SourceLoader(source: PathLike) -> WeightsLoader:
    """Any model source: a directory of any layout, an archive, a URL, "OPTIONS_URL WEIGHTS_URL" or a catalogue name."""
    return WeightsLoader(partial(load_model, source), str(source), str(source))


def _read_embedded(name: Optional[str], with_softmax: bool) -> NativeModel:
    directory = default_model_path() if name is None else DEFAULT_MODEL_DIR.parent / name
    return load_native(directory, with_softmax=with_softmax)


def _read_published(path: PathLike, with_softmax: bool) -> NativeModel:
    directory = _directory(path)
    options, weights, vocab = find_published_files(directory)
    metadata = {"source": str(directory), "format": "published"}
    with fetch_again_hint(path, directory):
        return NativeModel(load_published(options, weights, vocab), metadata=metadata)


def _read_native(path: PathLike, with_softmax: bool) -> NativeModel:
    directory = _directory(path)
    if not is_native(directory):
        if directory.is_dir() and "published" in layouts_in(directory):  # a loader for it exists
            raise WeightsError(f"{directory}: no elmo.json; for options.json + weights.hdf5 use "
                               "spacy-elmo.PublishedLoader.v1 (or convert it: python -m spacy_elmo convert "
                               f"{directory} OUT --to native)")
        raise WeightsError(f"{directory}: {not_native_reason(directory)}")
    with fetch_again_hint(path, directory):
        return load_native(directory, with_softmax=with_softmax)


def resolve_loader(weights: WeightsSetting = None) -> Loader:
    """The loader a `weights` setting names: None, the embedded model; a loader, itself; else `SourceLoader`.

    Nothing is read until the loader runs.
    """
    if weights is None:
        return EmbeddedLoader()
    if callable(weights):
        return weights
    if not str(weights).strip():  # str(Path("")) is "." : an empty setting would read the working directory
        raise ValueError(
            "weights: an empty string names no model; leave it null for the embedded English biLM, "
            "or give a directory, archive, URL or catalogue name"
        )
    return SourceLoader(weights)


def read_weights(weights: WeightsSetting = None, with_softmax: bool = False) -> NativeModel:
    """The model a `weights` setting names, read through its loader (what the commands load)."""
    loader = resolve_loader(weights)
    if not isinstance(loader, WeightsLoader):
        raise WeightsError(f"{loader!r}: a loader that fills models only; it cannot be read on its own")
    return loader.read(with_softmax)


# one load per model at a time: threads whose first calls arrive together (a web server's first
# requests) each built the whole biLM and all but one threw theirs away. One lock per model (keyed
# by its shim: thinc's Model takes no weak references), so an unrelated model's slow load (a
# download) does not hold this one up.
_LOCKS_GUARD = threading.Lock()
_LOAD_LOCKS: "weakref.WeakKeyDictionary[Any, threading.RLock]" = weakref.WeakKeyDictionary()


def _fresh_locks_after_fork() -> None:
    """In a forked child (spaCy's `n_process`): locks held by the parent's other threads at the fork
    would be held forever, so the child starts with none."""
    global _LOCKS_GUARD, _LOAD_LOCKS
    _LOCKS_GUARD = threading.Lock()
    _LOAD_LOCKS = weakref.WeakKeyDictionary()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fresh_locks_after_fork)


def _load_lock(model: Model) -> Any:
    """The lock of `model`'s load (made on first use)."""
    from .bilm_model import model_shim  # bilm_model imports this module

    with _LOCKS_GUARD:
        return _LOAD_LOCKS.setdefault(model_shim(model), threading.RLock())


def ensure_weights(model: Model) -> Model:
    """Fill a biLM model through its loader (`model.attrs["loader"]`; none set: the embedded model),
    unless it holds a biLM already (built from sizes, loaded, or deserialized). Threads that call it
    on one model at once load it once: the others wait and find it loaded."""
    from .bilm_model import has_bilm  # bilm_model imports this module

    if not has_bilm(model):
        with _load_lock(model):
            if not has_bilm(model):
                resolve_loader(model.attrs.get(LOADER_ATTR))(model)
    return model


def _directory(path: PathLike) -> Path:
    directory = resolve_source(path)
    if not directory.is_dir():
        raise WeightsError(f"{directory}: " + ("not a directory" if directory.exists() else "no such directory"))
    return directory


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


__all__ = [
    "EmbeddedLoader",
    "PublishedLoader",
    "NativeLoader",
    "SourceLoader",
    "WeightsLoader",
    "ensure_weights",
    "read_weights",
    "resolve_loader",
]
