"""`embed`: a text file in, the published HDF5 dump layout out."""
import os
from pathlib import Path
from typing import Optional

import typer
from tqdm import tqdm
from wasabi import msg

from ..bilm.backends import BackendError
from ..bilm.embedding import EMBED_BATCH_SENTENCES, EMBED_BATCH_TOKENS
from ._util import fail, load_weights_or_fail, pick_device


def embed_cli(
    input_path: Path = typer.Argument(
        ..., help="Text file: one sentence per line, tokens separated by whitespace", exists=True, dir_okay=False
    ),
    output_path: Path = typer.Argument(..., help="HDF5 file to write"),
    weights: Optional[str] = typer.Option(
        None, "--weights", "-w",
        help="Model: a directory, archive, URL or catalogue name (default: embedded English model)",
    ),
    batch_size: int = typer.Option(EMBED_BATCH_SENTENCES, "--batch-size", "-b", help="Most sentences per batch"),
    batch_tokens: int = typer.Option(EMBED_BATCH_TOKENS, "--batch-tokens", help="Most padded tokens per batch"),
    chunk_lines: int = typer.Option(
        4096, "--chunk-lines",
        help="Lines embedded between flushes to OUTPUT.partial (at most this much work is lost to a crash)",
    ),
    layers: str = typer.Option("all", "--layers", "-l", help="all (L+1, n, w), top, average, or mix (n, w)"),
    mix: Optional[str] = typer.Option(None, "--mix", help="With --layers mix: comma-separated layer weights"),
    shard: Optional[str] = typer.Option(
        None, "--shard", help="K/N: embed lines with number % N == K into OUTPUT.shard-K-of-N"
    ),
    join: int = typer.Option(0, "--join", help="Only join N finished shard files into OUTPUT"),
    resume: bool = typer.Option(False, "--resume", help="Continue an interrupted run (OUTPUT.partial)"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing or interrupted output"),
    cache: int = typer.Option(50000, "--cache", help="Token-encoder cache size (0: off)"),
    precision: str = typer.Option("float32", "--precision", help="float32, or bfloat16/float16 autocast"),
    backend: str = typer.Option("auto", "--backend", help="auto, reference, mkl, onednn or onednn+kernel (see `info`)"),
    encoding_errors: str = typer.Option(
        "strict", "--encoding-errors",
        help="strict: stop at the first line that is not UTF-8; replace: read bad bytes as U+FFFD",
    ),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help="GPU to use (-1: CPU; under torchrun: LOCAL_RANK)"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar"),
) -> None:
    """Embed every line of INPUT into OUTPUT (the reference `elmo` dump layout).

    One dataset per line, named by its line number, of shape (L+1, n_tokens,
    width); empty lines get (L+1, 0, width). Under torchrun (or with --shard
    K/N) each process embeds its share into its own file, and the shards are
    joined into OUTPUT with the same keys as a single run.
    """
    from ..io.dump import DumpError, embed_file, join_shards

    if join:
        try:
            join_shards(output_path, join, input_path, encoding_errors)
        except DumpError as err:
            fail(str(err))
        msg.good(f"Joined {join} shards into {output_path}")
        return
    world = int(os.environ.get("WORLD_SIZE", "1"))
    k, n = 0, 1
    if shard:
        try:
            k, n = (int(x) for x in shard.split("/"))
        except ValueError:
            fail(f"--shard must look like K/N, got {shard!r}")
    elif world > 1:
        k, n = int(os.environ["RANK"]), world
        if gpu_id < 0 and _cuda():
            gpu_id = int(os.environ.get("LOCAL_RANK", k))
    mix_weights = None
    if mix:
        try:
            mix_weights = [float(x) for x in mix.split(",")]
        except ValueError:
            fail(f"--mix must be comma-separated numbers, got {mix!r}")
    loaded = load_weights_or_fail(weights)
    model = loaded.bilm.to(pick_device(gpu_id))
    try:
        model.backend = backend
    except BackendError as err:
        fail(f"--backend: {err}")
    if cache:
        model.enable_cache(cache)
    bar = tqdm(desc=f"embedding{f' shard {k}/{n}' if n > 1 else ''}", unit=" tok", unit_scale=True, disable=quiet)
    try:
        path = embed_file(
            model,
            input_path,
            output_path,
            layers=layers,
            mix=mix_weights,
            batch_tokens=batch_tokens,
            batch_size=batch_size,
            chunk_lines=chunk_lines,
            shard=(k, n),
            resume=resume,
            overwrite=overwrite,
            precision=precision,
            encoding_errors=encoding_errors,
            on_progress=lambda tokens, sentences: bar.update(tokens),
        )
    except DumpError as err:
        fail(str(err))
    finally:
        bar.close()
    if world > 1 and not shard:
        import torch.distributed as dist

        if not dist.is_initialized():
            dist.init_process_group("gloo")
        dist.barrier()
        if k == 0:
            join_shards(output_path, n, input_path, encoding_errors)
            msg.good(f"Wrote {output_path} ({n} shards)")
        dist.destroy_process_group()
        return
    msg.good(f"Wrote {path}")


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()
