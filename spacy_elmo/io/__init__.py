"""Weight formats: the published `options.json` + `weights.hdf5`, the native format,
ELMoForManyLangs' layout, and the biLM a saved spaCy pipeline holds.

`load_bilm(path)` is the one function users need: PATH is a directory in
any of these layouts (or an archive, URL or catalogue name); `load_model`
also gives the softmax and vocabulary where the model has them.
"""
from pathlib import Path
from typing import Optional, Sequence, Union

from ..bilm.model import BiLM
from .errors import DamagedFileError, WeightsError
from .layouts import (
    PUBLISHED_OPTIONS,
    PUBLISHED_VOCAB,
    PUBLISHED_WEIGHTS,
    check_one_layout,
    layouts_in,
    published_files,
)
from .manylangs import is_manylangs, load_manylangs
from .native import (
    NativeModel,
    META_FILE,
    is_native,
    is_native_bytes,
    load_native,
    load_native_bytes,
    read_meta,
    save_native,
    save_native_bytes,
)
from .options import config_from_options, config_to_options, published_shapes
from .published import export_published, load_published, read_options
from .saved_pipeline import is_pipeline, load_pipeline_bilm
from .sources import CACHE_ENV, cache_dir, fetch_again_hint, resolve_source

PathLike = Union[str, Path]


def find_published_files(directory: PathLike) -> tuple:
    """(options, weights, vocab or None) of a published-format directory."""
    directory = Path(directory)
    options = _pick(directory, *PUBLISHED_OPTIONS, "options file (options.json)")
    weights = _pick(directory, *PUBLISHED_WEIGHTS, "weight file (weights.hdf5)")
    return options, weights, _vocabulary_file(directory)


def _vocabulary_file(directory: Path) -> Optional[Path]:
    """vocab.txt, else the one *vocab*.txt (the 1B Word Benchmark's is vocab-2016-09-10.txt; an export
    may name its own); None where there is none, or several to choose from."""
    found = published_files(directory, PUBLISHED_VOCAB)
    preferred = [name for name in PUBLISHED_VOCAB[0] if name in found]
    chosen = preferred or (found if len(found) == 1 else [])
    return directory / chosen[0] if chosen else None


def _pick(directory: Path, names: Sequence[str], pattern: str, what: str) -> Path:
    for name in names:
        if (directory / name).is_file():
            return directory / name
    # hidden files are never the model's: macOS leaves AppleDouble `._NAME` files beside each file it copies
    found = sorted(p for p in directory.glob(pattern) if not p.name.startswith("."))
    if len(found) == 1:
        return found[0]
    if not found:
        raise WeightsError(f"{directory}: no {what} found")
    raise WeightsError(f"{directory}: several candidates for the {what}: {[p.name for p in found]}")


def load_model(path: Optional[PathLike] = None, with_softmax: bool = True) -> NativeModel:
    """The model `path` names, in any supported layout; None: the package's embedded English model.

    `path`: a directory, an archive, a URL, a catalogue name or an installed pipeline package (`resolve_source`).
    Published and ELMoForManyLangs weights have no softmax. The registered
    loaders (`spacy_elmo.layers.loaders`) read through this and the format
    readers; the component and the commands get their weights through those.
    """
    if path is None:
        from ..resources import default_model_path  # resources imports io: not at module level

        path = default_model_path()
    resolved = Path(resolve_source(path))  # an archive, URL or catalogue name becomes a cached directory
    with fetch_again_hint(path, resolved):  # files changed since they were verified: a fresh copy fixes that
        try:
            return _load_directory(resolved, with_softmax)
        except PermissionError as err:  # no damage, and no download fixes it
            raise WeightsError(
                f"{err.filename or resolved}: cannot read ({err.strerror or 'permission denied'}); give this user "
                "read access to the model's files and search access to its folders"
            ) from None


def _load_directory(path: Path, with_softmax: bool) -> NativeModel:
    if not path.exists():
        raise WeightsError(f"{path}: no such directory")
    if not path.is_dir():
        raise WeightsError(f"{path}: {_EXPECTED}")
    check_one_layout(path)
    if is_native(path):
        return load_native(path, with_softmax=with_softmax)
    native_files = layouts_in(path).get("native")
    if native_files:
        raise WeightsError(f"{path}: an incomplete native model ({', '.join(native_files)} but no {META_FILE})")
    if is_pipeline(path):  # a fine-tuned pipeline's biLM (it has no softmax)
        return load_pipeline_bilm(path)
    if is_manylangs(path) or "ELMoForManyLangs" in layouts_in(path):  # an incomplete one: it names what is missing
        return NativeModel(load_manylangs(path), metadata={"source": str(path), "format": "elmoformanylangs"})
    # no file of any layout, not even half a published model (find_published_files names the half missing)
    half = published_files(path, PUBLISHED_OPTIONS) or published_files(path, PUBLISHED_WEIGHTS)
    if not layouts_in(path) and not half:
        raise WeightsError(f"{path}: {_EXPECTED}{_models_below(path)}")
    options, weights, vocab = find_published_files(path)
    return NativeModel(load_published(options, weights, vocab), metadata={"source": str(path), "format": "published"})


_EXPECTED = (
    "expected a directory holding elmo.json, options.json + weights.hdf5, an ELMoForManyLangs model "
    "(config.json, char.dic, word.dic, *.pkl) or a spaCy pipeline with an elmo component"
)


def _models_below(directory: Path) -> str:
    """"; its subfolders A, B hold models": for a folder one level above its models (a pretraining
    output's model-best and model-last, an archive's top folder)."""
    holding = sorted(sub.name for sub in directory.iterdir()
                     if sub.is_dir() and not sub.name.startswith(".") and (layouts_in(sub) or is_pipeline(sub)))
    return f"; its subfolder(s) {', '.join(holding)} hold a model: pass one of them" if holding else ""


def not_native_reason(directory: PathLike) -> str:
    """Why `directory` is not a native model, with what to do: missing; one level above its models (a
    pretraining output); or another layout, to convert. A loader or a setting that reads native models
    only says this (they used to advise another loader, or a conversion, that failed in turn)."""
    directory = Path(directory)
    if not directory.is_dir():
        return "no such directory" if not directory.exists() else "not a directory"
    below = _models_below(directory)
    if below:
        return "not a model itself" + below
    if layouts_in(directory) or is_pipeline(directory):
        return f"not a native spacy-elmo model (no elmo.json); convert it first: python -m spacy_elmo convert " \
               f"{directory} OUT --to native"
    return f"not a native spacy-elmo model (no elmo.json, nor any other model's files): {_EXPECTED}"


def load_bilm(path: Optional[PathLike] = None) -> BiLM:
    """The biLM (without a softmax) of the model `path` names; with no path, the embedded English model."""
    return load_model(path, with_softmax=False).bilm


__all__ = [
    "not_native_reason",
    "DamagedFileError",
    "WeightsError",
    "NativeModel",
    "load_bilm",
    "load_model",
    "load_native",
    "save_native",
    "load_native_bytes",
    "load_pipeline_bilm",
    "save_native_bytes",
    "is_native_bytes",
    "read_meta",
    "load_published",
    "export_published",
    "read_options",
    "config_from_options",
    "config_to_options",
    "published_shapes",
    "find_published_files",
    "resolve_source",
    "cache_dir",
    "CACHE_ENV",
    "is_manylangs",
    "load_manylangs",
]
