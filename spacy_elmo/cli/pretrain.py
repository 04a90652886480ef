"""`pretrain`: train a biLM on raw text."""
import errno
import os
from pathlib import Path
from typing import List, Optional, Tuple

import typer
from wasabi import msg

from ..io.errors import WRITE_ERRNOS
from ._util import fail, pick_device

# errors of a write that failed for want of room or rights (or a file past the file system's size),
# which --resume can continue after
_WRITE_ERRNOS = WRITE_ERRNOS | {errno.EFBIG}


def pretrain_cli(
    ctx: typer.Context,
    config_path: Optional[str] = typer.Argument(
        None,
        help="Pretraining config (.cfg); omitted (only OUTPUT_DIR given): the built-in defaults",
        show_default=False,
    ),
    output_dir: Optional[str] = typer.Argument(
        None, help="Run directory: checkpoints, model-best, model-last, log; required",
        show_default=False,
    ),
    resume: bool = typer.Option(False, "--resume", help="Continue the run in OUTPUT_DIR from its last checkpoint"),
    init_from: Optional[str] = typer.Option(
        None,
        "--init-from",
        help="Start from this native model's weights (\"embedded\": the package's own biLM) with a fresh "
        "optimizer and schedule; same as --paths.init_from",
    ),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help="GPU to train on (-1: CPU)"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar"),
) -> None:
    """Pretrain a biLM (ELMo stage one) on plain text, .txt.gz or .spacy files.

    Text is split by spaCy's tokenizer (the config's corpus.tokenizer =
    "spacy", the default) or, already tokenized, at whitespace
    (--corpus.tokenizer whitespace: no spaCy needed).

    With one path, it is OUTPUT_DIR and the settings are the built-in
    defaults; with two, CONFIG_PATH then OUTPUT_DIR. Settings not in
    CONFIG_PATH take their defaults; override any of them on the command
    line, e.g. --paths.train corpus.txt.gz --training.max_steps 1000.
    --init-from MODEL continues training an existing native model (e.g.
    --init-from embedded, the shipped biLM) in a new run. Under
    torchrun, each process trains on its share of the batches
    (DistributedDataParallel). SIGINT/SIGTERM write a checkpoint and stop
    (exit status 130/143); --resume continues exactly where it left off.
    """
    from ..io.file_lock import OutputBusyError
    from ..pretrain import Interrupted, SettingsError, load_config, pretrain
    from ..pretrain.checkpoint import CheckpointError
    from ..pretrain.distributed import launched_world_size
    from ..pretrain.settings import parse_overrides
    from ..pretrain.text_corpus import SpacyRequired
    from ..resumable_training import SIGNAL_EXIT, output_folder_problem

    config_file, output, extra = _paths_and_overrides(ctx, config_path, output_dir)
    problem = output_folder_problem(output)  # a file there: one line saying so (it was "File exists")
    if problem:
        fail(problem)
    try:
        overrides = parse_overrides(extra)
    except SettingsError as err:
        fail(f"could not parse the overrides {extra}: {err}")
    if init_from is not None:
        overrides["paths.init_from"] = init_from
    try:
        config = load_config(config_file, overrides)
    except SettingsError as err:
        fail(str(err))
    device = pick_device(gpu_id)
    if device != "cpu" and launched_world_size() > 1:
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"  # under torchrun: one GPU per process
    try:
        result = pretrain(config, output, resume=resume, device=device, progress=not quiet)
    except Interrupted as err:
        msg.warn(str(err))
        raise typer.Exit(SIGNAL_EXIT.get(err.signal or "SIGINT", SIGNAL_EXIT["SIGINT"]))
    except (SettingsError, CheckpointError, FileNotFoundError, ValueError, SpacyRequired, OutputBusyError) as err:
        fail(str(err))
    except OSError as err:  # a full disk, a read-only file system; an input that cannot be read
        where = err.filename or output
        if err.errno in _WRITE_ERRNOS:
            fail(
                f"{where}: cannot write ({err.strerror or err}); what was saved before is intact: make room (or "
                "fix the permissions), then run again with --resume to continue from the last checkpoint"
            )
        fail(f"{where}: {err.strerror or err}")
    dev = result.get("dev")
    msg.good(f"Trained {result['step']} steps on {result['tokens']:,} tokens in {result['elapsed_s']:.0f}s")
    if dev:
        msg.info(
            f"dev perplexity: forward {dev['forward']:.2f}, backward {dev['backward']:.2f}, mean {dev['mean']:.2f}"
        )
    msg.info(f"models: {output / 'model-best'} and {output / 'model-last'}")


def _paths_and_overrides(
    ctx: typer.Context, config_path: Optional[str], output_dir: Optional[str]
) -> Tuple[Optional[Path], Path, List[str]]:
    """(config file or None, output directory, the `--section.key value` overrides) of the command line.

    The config is optional but comes first, so the parser cannot tell the two paths apart by
    position alone; and as the overrides are options it does not know, it hands their values
    out as positional arguments too (`pretrain runs/x --paths.train t.txt` gives it `runs/x`,
    `--paths.train` and `t.txt` in that order). So both arguments are read here, in order
    with the unparsed rest: the paths are the words before the first `--` option, one path
    being OUTPUT_DIR and two CONFIG_PATH OUTPUT_DIR; the rest are overrides. A lone path
    that is a file or ends in .cfg is a config whose OUTPUT_DIR was forgotten, not a run
    directory to create. A malformed line is a usage error (status 2, `ctx.fail`), as the
    parser reports one.
    """
    words = [w for w in (config_path, output_dir) if w is not None] + list(ctx.args)
    n_paths = next((i for i, word in enumerate(words) if word.startswith("-")), len(words))
    paths, extra = words[:n_paths], words[n_paths:]
    usage = "expected [config_path] output_dir before the --section.key overrides"
    if not paths:
        ctx.fail(f"Missing argument 'output_dir': {usage}")
    if len(paths) > 2:
        ctx.fail(f"Got {len(paths)} paths {paths}: {usage}")
    if len(paths) == 1 and (paths[0].endswith(".cfg") or Path(paths[0]).is_file()):
        ctx.fail(
            f"Missing argument 'output_dir': {paths[0]} names a config file; pass the run directory after it "
            "(with one path only, it is the run directory and the settings are the defaults)"
        )
    config = Path(paths[0]) if len(paths) == 2 else None
    if config is not None and not config.is_file():
        problem = "is a directory, not a config file" if config.is_dir() else "does not exist"
        ctx.fail(f"Invalid value for 'config_path': file '{config}' {problem}.")
    return config, Path(paths[-1]), extra
