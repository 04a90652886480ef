"""`pretrain`: train a biLM on raw text."""
import os
from pathlib import Path
from typing import Optional

import typer
from wasabi import msg

from ._util import fail, pick_device


def pretrain_cli(
    ctx: typer.Context,
    config_path: Optional[Path] = typer.Argument(
        None, help="Pretraining config (.cfg); omitted: the built-in defaults", exists=True, dir_okay=False
    ),
    output_dir: Path = typer.Argument(..., help="Run directory: checkpoints, model-best, model-last, log"),
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

    Text is split by spaCy's tokenizer ([corpus] tokenizer = "spacy", the
    default) or, already tokenized, at whitespace (--corpus.tokenizer
    whitespace: no spaCy needed).

    Settings not in CONFIG_PATH take their defaults; override any of them on
    the command line, e.g. --paths.train corpus.txt.gz --training.max_steps
    1000. --init-from MODEL continues training an existing native model
    (e.g. --init-from embedded, the shipped biLM) in a new run. Under
    torchrun, each process trains on its share of the batches
    (DistributedDataParallel). SIGINT/SIGTERM write a checkpoint and stop;
    --resume continues exactly where it left off.
    """
    from ..pretrain import Interrupted, SettingsError, load_config, pretrain
    from ..pretrain.checkpoint import CheckpointError
    from ..pretrain.settings import parse_overrides
    from ..pretrain.text_corpus import SpacyRequired

    try:
        overrides = parse_overrides(ctx.args)
    except SettingsError as err:
        fail(f"could not parse the overrides {ctx.args}: {err}")
    if init_from is not None:
        overrides["paths.init_from"] = init_from
    try:
        config = load_config(config_path, overrides)
    except SettingsError as err:
        fail(str(err))
    device = pick_device(gpu_id)
    if device != "cpu" and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"  # under torchrun: one GPU per process
    try:
        result = pretrain(config, output_dir, resume=resume, device=device, progress=not quiet)
    except Interrupted as err:
        msg.warn(str(err))
        raise typer.Exit(130)
    except (SettingsError, CheckpointError, FileNotFoundError, ValueError, SpacyRequired) as err:
        fail(str(err))
    dev = result.get("dev")
    msg.good(f"Trained {result['step']} steps on {result['tokens']:,} tokens in {result['elapsed_s']:.0f}s")
    if dev:
        msg.info(
            f"dev perplexity: forward {dev['forward']:.2f}, backward {dev['backward']:.2f}, mean {dev['mean']:.2f}"
        )
    msg.info(f"models: {Path(output_dir) / 'model-best'} and {Path(output_dir) / 'model-last'}")
