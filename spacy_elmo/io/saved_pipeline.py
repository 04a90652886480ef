"""A saved spaCy pipeline as a model source: the biLM one of its components holds.

A pipeline trained with the biLM fine-tuned (`scripts/finetune.py`) holds the
only copy of those weights. Naming the pipeline directory (`model-best`), or
the folder of the component that holds the biLM, wherever a model is
expected makes them usable everywhere else: `convert` to the native or
published format, `embed`, or the `weights` of an `elmo` component in
another pipeline.

The biLM usually lives in the `elmo` component; after
`nlp.replace_listeners("elmo", "tagger", ...)` the tagger holds a copy of its
own, which may have trained apart from it. So every component's saved model
is searched: a pipeline whose components hold one biLM, or several equal to
the bit, gives it; one with different biLMs names their folders to choose
from.

Read without spaCy or thinc, from the files `nlp.to_disk` writes: the
pipeline's `config.cfg` names the components, and each one's `model` file is
thinc's msgpack map of the model, whose torch shims (each in thinc's
envelope, a map of its config and state) hold the biLM in the native format's
bytes (`save_native_bytes`: versioned and checksummed, so a damaged file is a
`WeightsError` that says so).
"""
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import srsly
from confection import Config

from .errors import WeightsError
from .native import NativeModel, is_native_bytes, load_native_bytes

PathLike = Union[str, Path]

PIPELINE_FILES = ("config.cfg", "meta.json")
"""What `nlp.to_disk` writes at the top of every pipeline directory."""
MODEL_FILE = "model"
"""A trainable component's saved thinc model, in its folder."""
FACTORY = "elmo"


def is_pipeline(directory: PathLike) -> bool:
    """Whether `directory` is a saved spaCy pipeline, or a component's folder inside one."""
    directory = Path(directory)
    return is_pipeline_root(directory) or (
        (directory / MODEL_FILE).is_file() and is_pipeline_root(directory.parent))


def is_pipeline_root(directory: Path) -> bool:
    """Whether `directory` holds a saved pipeline itself (its config.cfg and meta.json)."""
    return all((directory / name).is_file() for name in PIPELINE_FILES)


def pipeline_components(pipeline: Path) -> Dict[str, Dict[str, Any]]:
    """The pipeline config's `[components]` blocks by name, in its order."""
    try:
        config = Config().from_disk(pipeline / "config.cfg", interpolate=False)
    except Exception as err:  # confection's parse errors have no common base class
        raise WeightsError(f"{pipeline / 'config.cfg'}: not a readable pipeline config ({err})") from None
    return {name: block for name, block in config.get("components", {}).items() if isinstance(block, dict)}


def load_pipeline_bilm(directory: PathLike) -> NativeModel:
    """The biLM the pipeline's components hold (or the one the component whose folder `directory` is
    holds), as a model without a softmax. WeightsError for a pipeline with none, with different ones
    (name a folder), a component that holds none, and damaged files."""
    directory = Path(directory)
    if is_pipeline_root(directory):
        name, data = _the_pipelines_bilm(directory)
        pipeline = directory
    else:
        pipeline, name = directory.parent, directory.name
        components = pipeline_components(pipeline)
        if name not in components:
            raise WeightsError(f"{directory}: not the folder of a component of the pipeline {pipeline}")
        data = _one_bilm(directory / MODEL_FILE, name, components[name])
    folder = pipeline / name
    metadata: Dict[str, Any] = {"source": str(folder), "format": "spacy-pipeline", "component": name}
    for key in ("weights", "initialized_from"):  # where an elmo component's biLM started: its setting, or loader
        value = _component_setting(folder, key)
        if value:
            metadata[key] = value
    loaded = load_native_bytes(data, with_softmax=False, source=str(folder / MODEL_FILE))
    return NativeModel(loaded.bilm, metadata={**loaded.metadata, **metadata})


def _the_pipelines_bilm(pipeline: Path) -> Tuple[str, bytes]:
    """(component, native bytes) of the biLM the pipeline holds, searched in every component."""
    components = pipeline_components(pipeline)
    held: List[Tuple[str, bytes]] = []
    unsaved: List[str] = []  # elmo components the pipeline was saved without (nlp.to_disk(exclude=...))
    for name, block in components.items():
        model_file = pipeline / name / MODEL_FILE
        if not model_file.is_file():
            unsaved += [name] if block.get("factory") == FACTORY else []
            continue
        blobs = _native_blobs(model_file)
        if block.get("factory") == FACTORY and not blobs:
            _one_bilm(model_file, name, block)  # says why an elmo component holds none
        held.extend((name, blob) for blob in blobs)
    if not held and unsaved:
        raise WeightsError(
            f"{pipeline}: its elmo component {unsaved[0]!r} has no saved files ({unsaved[0]}/{MODEL_FILE}): the "
            "pipeline was saved without it (nlp.to_disk(exclude=...)), and no other component holds a biLM"
        )
    if not held:
        raise WeightsError(f"{pipeline}: a spaCy pipeline none of whose components holds a biLM")
    if any(blob != held[0][1] for _, blob in held[1:]):
        names = list(dict.fromkeys(name for name, _ in held))
        raise WeightsError(
            f"{pipeline}: its components {', '.join(names)} hold different biLMs; name the folder of the one to "
            f"read, e.g. {pipeline / names[0]}"
        )
    return held[0]


def _one_bilm(model_file: Path, name: str, block: Dict[str, Any]) -> bytes:
    """The native bytes of the one biLM a component's saved model holds."""
    if not model_file.is_file():
        raise WeightsError(f"{model_file.parent}: the component {name!r} has no saved model ({MODEL_FILE})")
    states = _shim_states(model_file)
    blobs = [state for state in states if is_native_bytes(state)]
    if len(blobs) == 1:
        return blobs[0]
    if len(blobs) > 1:
        raise WeightsError(f"{model_file}: holds {len(blobs)} biLMs; this reads a component that holds one")
    if block.get("factory") == FACTORY and not any(states):
        raise WeightsError(
            f"{model_file}: the elmo component holds no weights (it was saved before it was initialized or "
            "first used)"
        )
    if block.get("factory") == FACTORY and states:
        raise WeightsError(
            f"{model_file}: holds no biLM in the native format (a pipeline saved by an older spacy-elmo: load it "
            "with spacy.load and save it again with nlp.to_disk)"
        )
    raise WeightsError(f"{model_file}: the component {name!r} holds no biLM")


def _native_blobs(model_file: Path) -> List[bytes]:
    return [state for state in _shim_states(model_file) if is_native_bytes(state)]


def _shim_states(model_file: Path) -> List[bytes]:
    """The state bytes of every torch-style shim (thinc's envelope: a map of config and state) of a saved
    thinc model; shims of another kind are left out."""
    try:
        saved = srsly.msgpack_loads(model_file.read_bytes())
        shims = [shim for node in saved["shims"] for shim in node]
    except Exception as err:  # msgpack raises several types for cut or garbled input
        raise WeightsError(f"{model_file}: not a saved thinc model, or a damaged one ({type(err).__name__})") from None
    states = []
    for shim in shims:
        try:
            envelope = srsly.msgpack_loads(shim)
        except Exception:  # another kind of shim (a biLM's damaged bytes inside one are the checksum's to find)
            continue
        if isinstance(envelope, dict) and isinstance(envelope.get("state"), bytes):
            states.append(envelope["state"])
    return states


def _component_setting(folder: Path, key: str) -> Optional[Any]:
    """One setting of the component's saved `cfg` (None where absent or unreadable: it is provenance only)."""
    try:
        cfg = srsly.read_json(folder / "cfg")
    except (OSError, ValueError):
        return None
    return cfg.get(key) if isinstance(cfg, dict) else None


__all__ = ["is_pipeline", "load_pipeline_bilm", "pipeline_components"]
