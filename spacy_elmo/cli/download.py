"""`download`: fetch a model into the cache ahead of time, for machines that run offline."""
from typing import Optional

import typer
from wasabi import msg

from ._util import fail, model_source


def download_cli(
    source: str = typer.Argument(
        ...,
        help="Catalogue name (see `info --list`), URL of a .zip/.tar.gz, \"OPTIONS_URL WEIGHTS_URL\", "
        "a local archive, or \"embedded\" (installed with the package: nothing to fetch; so is an installed pipeline "
        "package)",
    ),
    cache_dir: Optional[str] = typer.Option(  # a str: a Path option reads "" as "." (the working directory)
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
    SPACY_ELMO_CACHE there. A model already in the cache is checked again:
    every file's sha256 against the one recorded when it was fetched, then
    loaded; one whose files were damaged since is reported, and --force
    fetches it anew.
    """
    from ..io import DamagedFileError, WeightsError, load_model
    from ..io.sources import cached_path, check_entry, damaged_entry_hint, parse_source, resolve_source
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
        parsed = parse_source(source)
        was_cached = not force and cached_path(source, cache=cache_dir) is not None
        path = resolve_source(source, cache=cache_dir, progress=not quiet, refresh=force)
        # a fresh copy was verified before it entered the cache; a cached one is hashed file by file
        recorded = check_entry(path, parsed.label, full=True) if was_cached else True
    except WeightsError as err:  # a damaged cached file says so, with the remedy
        fail(str(err))
    if was_cached or parsed.kind == "directory":
        try:
            load_model(path, with_softmax=False)
        except DamagedFileError as err:
            if parsed.kind == "directory":
                fail(str(err))
            fail(f"{err} ({damaged_entry_hint(parsed.label, path)})")
        except WeightsError as err:
            fail(str(err))
    if quiet:
        print(path)
    elif parsed.installed:
        msg.info(f"{source} is an installed pipeline package, in {path}: nothing to download")
    elif parsed.kind == "directory":
        msg.info(f"{source} is a local directory: nothing to download")
    else:
        if not recorded:
            msg.info(f"The cached copy in {path} was fetched by an older spacy-elmo, which recorded no checksums: "
                     "it was checked by loading it; --force fetches it again with checksums")
        msg.good(f"Model in {path}")
