"""Shared command-line helpers."""
import os
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, Optional, Tuple, TypeVar, Union

import typer
from wasabi import msg

from ..io.errors import WeightsError

if TYPE_CHECKING:
    from spacy.language import Language

    from ..io.native import NativeModel


def fail(message: str, code: int = 1) -> NoReturn:
    """Print a clear error (no traceback) and exit non-zero."""
    msg.fail(message)
    raise typer.Exit(code)


# the name every command takes for the package's embedded English biLM, as `pretrain --init-from` does
EMBEDDED_MODEL = "embedded"


_Source = TypeVar("_Source", bound=Union[str, Path])


def model_source(source: Optional[_Source]) -> Optional[_Source]:
    """`source` as the loaders take it: None (the embedded model) for the name "embedded".

    `pretrain --init-from embedded` always meant the package's own biLM; the other commands
    pass their model argument to the loaders, which know no such name, so they map it here
    and the name means the same in every command. A directory called so is `./embedded`.
    """
    return None if source is not None and str(source) == EMBEDDED_MODEL else source


def load_weights_or_fail(path: Optional[Union[str, Path]], with_softmax: bool = False) -> "NativeModel":
    """The model `path` names (a directory, archive, URL, catalogue name, or "embedded"; None: the
    embedded one), or exit.

    Read through the loader that `path` picks (`spacy_elmo.layers.loaders.read_weights`), the same
    resolution the component's `weights` setting goes through. Where spaCy and thinc are not
    installed (a GPU machine set up by scripts/gpu_pretrain.py), the loaders cannot be imported;
    the io-level reader they are built on (`spacy_elmo.io.load_model`) reads the same sources.
    """
    try:
        from ..layers.loaders import read_weights
    except ImportError:
        from ..io import load_model as read_weights  # type: ignore[assignment]

    try:
        return read_weights(model_source(path), with_softmax=with_softmax)
    except WeightsError as err:
        fail(str(err))


def check_at_least(option: str, value: Optional[float], minimum: float, meaning: str = "") -> None:
    """Exit with one message if a number option is below `minimum` (None: not given, fine).

    Commands check their numbers before they load a model or create a file, so that a
    nonsensical value (a batch of 0 sentences, a cache of -1 entries) is one clear message
    instead of a traceback deep in the work, or an empty result that looks complete.
    `meaning`: what the smallest allowed value does, where it is special (e.g. "0: off").
    """
    if value is not None and value < minimum:
        extra = f" ({meaning})" if meaning else ""
        fail(f"{option} must be {minimum} or more{extra}, got {value}")


def spacy_lang_problem(lang: str) -> Optional[str]:
    """The one-line reason spacy.blank(lang) would fail, or None: spaCy has no such language, or
    its tokenizer needs a package that is not installed (found only by building it, so it is built).

    Without spaCy installed nothing is checked (None): the command says so itself when it needs
    spaCy. Commands (`check_spacy_lang_or_fail`) and the project's argparse scripts give this line."""
    from ..pretrain.text_corpus import LanguageError, SpacyRequired, blank_language

    try:
        blank_language(lang, f"--lang {lang}")
    except SpacyRequired:
        return None
    except LanguageError as err:
        return f"--lang {lang}: {err}"
    return None


def check_spacy_lang_or_fail(lang: str) -> None:
    """Exit with one message if spaCy has no language `lang`: checked before any work so that a
    typo costs nothing (the same message as `embed --lang` gives)."""
    problem = spacy_lang_problem(lang)
    if problem:
        fail(problem)


def try_load_pipeline(path: Union[str, Path]) -> Tuple[Optional["Language"], str]:
    """(spacy.load(path), "") or (None, the one-line reason it cannot be loaded).

    Not only a missing directory (OSError): a config.cfg that does not parse (confection's
    ValueError), a component file cut short ("Unpack failed", a ValueError) and a `lang` spaCy
    lacks (E048, an ImportError) were tracebacks. The reason is returned, not printed, so that
    `evaluate` and the project's argparse scripts each put it in their own words.
    """
    import spacy

    try:
        return spacy.load(path), ""
    except (OSError, ValueError, ImportError) as err:
        return None, " ".join(str(err).split())


def pick_device(gpu_id: int) -> str:
    import torch

    if gpu_id < 0:
        return "cpu"
    if not torch.cuda.is_available():
        fail(f"--gpu-id {gpu_id} given but CUDA is not available to torch on this machine")
    return f"cuda:{gpu_id}"


# PyTorch backs CPU tensors of 2 MB and more with transparent huge pages when this is
# "1" (c10's CPU allocator madvise(MADV_HUGEPAGE)s them); it reads the variable once,
# at its first allocation that size
HUGE_PAGES_VARIABLE = "THP_MEM_ALLOC_ENABLE"


def prefer_huge_pages() -> None:
    """Ask PyTorch for huge pages behind large CPU tensors in this process, unless
    the user set THP_MEM_ALLOC_ENABLE themselves (e.g. to 0).

    Every command runs this before it loads a model. A batch allocates tensors
    of tens of MB (the first LSTM layer's per-token input products, the highway's
    outputs) and, with 4 KiB pages, the kernel faults and zeroes each page anew,
    batch after batch; huge pages take most of those faults away and lower the
    peak memory (benchmarks/RESULTS.md, "Speed and memory", has the counts).
    """
    os.environ.setdefault(HUGE_PAGES_VARIABLE, "1")


def huge_pages() -> dict:
    """Whether this process asked PyTorch for huge pages, and what the kernel allows."""
    try:
        mode_line = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
        system = mode_line.split("[", 1)[1].split("]", 1)[0]  # e.g. "always [madvise] never"
    except (OSError, IndexError):
        system = None  # not Linux, or no transparent huge pages
    requested = os.environ.get(HUGE_PAGES_VARIABLE) == "1"
    return {"requested": requested, "system_mode": system, "in_use": requested and system in ("always", "madvise")}
