"""`download`: fetch a model into the cache ahead of time, for machines that run offline."""
from pathlib import Path
from typing import Optional

import typer
from wasabi import msg

from ._util import fail, model_source


def download_cli(
    source: str = typer.Argument(
        ...,
        help="Catalogue name (see `info --list`), URL of a .zip/.tar.gz, \"OPTIONS_URL WEIGHTS_URL\", "
        "a local archive, or \"embedded\" (installed with the package: nothing to fetch)",
    ),
    cache_dir: Optional[Path] = typer.Option(
        None, "--cache-dir", help="Cache to fill (default: $SPACY_ELMO_CACHE, else the user cache directory)"
    ),
    force: bool = typer.Option(
        False, "--force", help="Fetch (or unpack) it again even if the cache has it; the entry is replaced once "
        "the new copy loads"
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar; print only the directory"),
) -> None:
    """Download (or unpack) a model once into the cache, check that it loads, and print where it went.

    Later runs that name the same model use the cached copy without the
    network; copy the cache directory to a machine that runs offline and set
    SPACY_ELMO_CACHE there. A model already in the cache is loaded again to
    check it; one whose files were damaged since is reported, and --force
    fetches it anew.
    """
    from ..io import DamagedFileError, WeightsError, load_model
    from ..io.sources import cached_path, parse_source, resolve_source
    from ..resources import default_model_path

    if model_source(source) is None:  # "embedded": the name every command takes; it ships with the package
        try:
            path = default_model_path()
        except WeightsError as err:
            fail(str(err))
        if quiet:
            print(path)
        else:
            msg.info(f"{source} is the package's own model, installed with it in {path}: nothing to download")
        return
    try:
        kind = parse_source(source).kind
        was_cached = not force and cached_path(source, cache=cache_dir) is not None
        path = resolve_source(source, cache=cache_dir, progress=not quiet, refresh=force)
    except WeightsError as err:
        fail(str(err))
    if was_cached or kind == "directory":  # a fresh copy was loaded before it entered the cache
        try:
            load_model(path, with_softmax=False)
        except DamagedFileError as err:
            if kind == "directory":
                fail(str(err))
            fail(f"{err}\nThe cached copy in {path} is damaged: `download \"{source}\" --force` fetches it again")
        except WeightsError as err:
            fail(str(err))
    if quiet:
        print(path)
    elif kind == "directory":
        msg.info(f"{source} is a local directory: nothing to download")
    else:
        msg.good(f"Model in {path}")
