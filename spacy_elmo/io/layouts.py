"""Which model layouts a directory holds files of: native, ELMoForManyLangs, published.

A directory holds one model. Files of a second layout beside it (an export
into a directory that held another model, a half-copied model) would make
`load_model` pick one by its precedence and load the wrong weights without a
word, so loading refuses such a directory and the writers refuse to add a
second layout to one.
"""
from pathlib import Path
from typing import Dict, List, Tuple, Union

from .errors import WeightsError
from .manylangs import LAYOUT_FILES as MANYLANGS_FILES
from .native import BILM_FILE, META_FILE, SOFTMAX_FILE, VOCABULARIES_FILE

PathLike = Union[str, Path]

# files only that layout writes (vocab.txt is shared by the native and the published layouts)
_MARKERS = {
    "native": (META_FILE, BILM_FILE, SOFTMAX_FILE, VOCABULARIES_FILE),
    "ELMoForManyLangs": tuple(name for name in MANYLANGS_FILES if name != "config.json"),
}
# a published model's files: the names preferred, then the pattern of the others (find_published_files)
PUBLISHED_OPTIONS = (("options.json",), "*options*.json")
PUBLISHED_WEIGHTS = (("weights.hdf5", "lm_weights.hdf5", "model.hdf5"), "*weights*.hdf5")
# a word-input model's vocabulary (the 1B Word Benchmark's is vocab-2016-09-10.txt; an export may name its own)
PUBLISHED_VOCAB = (("vocab.txt",), "*vocab*.txt")


def published_files(directory: Path, kind: Tuple[Tuple[str, ...], str]) -> List[str]:
    names, pattern = kind
    # hidden files are never a model's (macOS's AppleDouble `._weights.hdf5` beside weights.hdf5)
    found = {p.name for p in directory.glob(pattern) if p.is_file() and not p.name.startswith(".")}
    return sorted(found | {name for name in names if (directory / name).is_file()})


def layouts_in(directory: PathLike) -> Dict[str, List[str]]:
    """Layout name -> the files of it that `directory` holds (layouts with none are left out)."""
    directory = Path(directory)
    found = {layout: [name for name in names if (directory / name).is_file()] for layout, names in _MARKERS.items()}
    options = published_files(directory, PUBLISHED_OPTIONS)
    weights = published_files(directory, PUBLISHED_WEIGHTS)
    # a published model is a pair: an options file alone (a tokenizer's) or an .hdf5 alone is not one
    found["published"] = options + weights if options and weights else []
    return {layout: names for layout, names in found.items() if names}


def _described(layouts: Dict[str, List[str]]) -> str:
    return "; ".join(f"{layout}: {', '.join(names[:4])}" for layout, names in layouts.items())


def check_one_layout(directory: PathLike) -> None:
    """Refuse a directory that holds files of more than one layout."""
    layouts = layouts_in(directory)
    if len(layouts) > 1:
        raise WeightsError(
            f"{directory}: holds files of {len(layouts)} model layouts ({_described(layouts)}), so which model "
            "it holds is ambiguous; keep one model per directory"
        )


def check_can_write(directory: PathLike, layout: str) -> None:
    """Refuse to write a model of `layout` into a directory that holds another layout's files."""
    others = {name: files for name, files in layouts_in(directory).items() if name != layout}
    if others:
        raise WeightsError(
            f"{directory}: already holds another model ({_described(others)}); write the {layout} model to an "
            "empty directory, or remove those files first"
        )


__all__ = ["PUBLISHED_OPTIONS", "PUBLISHED_VOCAB", "PUBLISHED_WEIGHTS", "check_can_write", "check_one_layout",
           "layouts_in", "published_files"]
