"""`embed`: text, JSONL, CoNLL-U or .spacy files in; the published HDF5 dump layout (or Parquet) out,
here or on Ray Data."""
import signal
import threading
import warnings
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any, Iterator, List, Optional, TextIO, Tuple, Type, Union

import typer
from tqdm import tqdm
from wasabi import msg

from ..bilm.engine import BackendError
from ..bilm.engine.bulk import EMBED_BATCH_SENTENCES, EMBED_BATCH_TOKENS, PRECISIONS
from .. import defaults
from ..progress_bars import progress_bar
from ._util import check_at_least, check_spacy_lang_or_fail, fail, load_weights_or_fail, model_source, pick_device


def embed_cli(
    input_paths: List[str] = typer.Argument(
        ...,
        help="Input files or globs (local or fsspec URLs): text (one sentence per line, tokens separated by "
        "whitespace), .jsonl, .conllu or .spacy",
    ),
    output_path: str = typer.Argument(..., help="HDF5 file to write (a directory with --format parquet)"),
    weights: Optional[str] = typer.Option(
        None, "--weights", "-w",
        help="Model: a directory, archive, URL or catalogue name (default: embedded English model)",
    ),
    input_format: str = typer.Option(
        "auto", "--input-format", help="auto (by extension), text, jsonl, conllu or spacy"
    ),
    lang: Optional[str] = typer.Option(None, "--lang", help='JSONL "text": tokenize with spacy.blank(LANG)'),
    pipeline: Optional[str] = typer.Option(
        None, "--pipeline", help='JSONL "text": tokenize with this spaCy pipeline (name or path)'
    ),
    output_format: str = typer.Option("hdf5", "--format", help="hdf5 (the published dump) or parquet (part files)"),
    sentence_index: bool = typer.Option(
        True, "--sentence-index/--no-sentence-index", help="Write sentence_to_index (HDF5; off for huge outputs)"
    ),
    batch_size: int = typer.Option(EMBED_BATCH_SENTENCES, "--batch-size", "-b", help="Most sentences per batch"),
    batch_tokens: int = typer.Option(EMBED_BATCH_TOKENS, "--batch-tokens", help="Most padded tokens per batch"),
    chunk_lines: int = typer.Option(
        4096, "--chunk-lines",
        help="Units embedded between flushes to OUTPUT.partial (at most this much work is lost to a crash); "
        "units per Parquet part",
    ),
    layers: str = typer.Option(
        "all", "--layers", "-l", help="all (L+1, n, w); top, average or weighted (n, w): see --layer-weights"
    ),
    layer_weights: Optional[str] = typer.Option(
        None, "--layer-weights",
        help="With --layers weighted: L+1 comma-separated weights, one per layer; the layers' sum with these "
        "weights as given (no softmax, no gamma)",
    ),
    mix: Optional[str] = typer.Option(
        None, "--mix", hidden=True, help="Deprecated: the old name of --layer-weights"
    ),
    shard: Optional[str] = typer.Option(
        None, "--shard",
        help="K/N: embed one share into OUTPUT.shard-K-of-N (one input: units % N == K; several: whole files)",
    ),
    join: int = typer.Option(
        0, "--join", help="Only join N finished shard files (of one run's settings) into OUTPUT"
    ),
    resume: bool = typer.Option(
        False, "--resume",
        help="Continue an interrupted run (OUTPUT.partial, Parquet parts) with the same settings; the finished "
        "file replaces OUTPUT",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing or interrupted output"),
    engine: str = typer.Option("local", "--engine", help="local (this process) or ray (a Ray Data pipeline)"),
    workers: int = typer.Option(1, "--workers", help="--engine ray: biLM worker actors"),
    address: Optional[str] = typer.Option(
        None, "--address", help="--engine ray: join this Ray cluster (default: start a local instance)"
    ),
    cpus_per_worker: int = typer.Option(1, "--cpus-per-worker", help="--engine ray: CPUs (torch threads) per worker"),
    gpus_per_worker: Optional[float] = typer.Option(
        None, "--gpus-per-worker", help="--engine ray: GPUs per worker (default: 1 where the cluster has GPUs)"
    ),
    cache: int = typer.Option(defaults.TOKEN_CACHE_SIZE, "--cache", help="Token-encoder cache size (0: off)"),
    precision: str = typer.Option("float32", "--precision", help="float32, or bfloat16/float16 autocast"),
    backend: str = typer.Option(
        defaults.BACKEND, "--backend",
        help="auto, reference, mkl, onednn, onednn+kernel, or int8 (opt-in, approximate; see `info`)",
    ),
    encoding_errors: str = typer.Option(
        "strict", "--encoding-errors",
        help="strict: stop at the first line that is not UTF-8; replace: read bad bytes as U+FFFD",
    ),
    gpu_id: int = typer.Option(
        -1, "--gpu-id", "-g",
        help="GPU to use (-1: CPU; under torchrun with CUDA: LOCAL_RANK's, CUDA_VISIBLE_DEVICES= for the CPU)",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar"),
) -> None:
    """Embed every unit of INPUT into OUTPUT (the reference `elmo` dump layout, or Parquet).

    A unit is a line of a text file, a JSONL line, a CoNLL-U sentence or a
    sentence of a .spacy doc. One dataset per unit, named by its number
    ("FILE:NUMBER" with several input files), of shape (L+1, n_tokens,
    width); empty lines get (L+1, 0, width). Under torchrun (or with --shard
    K/N) each process embeds its share into its own file, and the shards are
    joined into OUTPUT with the same keys as a single run; --engine ray runs
    the same work on a Ray cluster and writes the same file.
    """
    from ..embedding.dump import (
        DumpError, check_layers, check_output_before_work, embed_file, followed_output_link, join_shards,
    )

    if join < 0:
        fail(f"--join N joins N shard files, so N must be 1 or more (0, the default: embed), got {join}")
    if output_format == "hdf5":
        try:  # a link to a file: the file is written (its .partial and lock beside it); its shards too
            output_path = followed_output_link(output_path)
        except DumpError as err:
            fail(str(err))
    if join:
        try:
            join_shards(output_path, join, overwrite=overwrite)
        except DumpError as err:
            fail(str(err))
        msg.good(f"Joined {join} shards into {output_path}")
        return
    if engine not in ENGINES:
        fail(f"--engine must be one of {ENGINES}, got {engine!r}")
    _check_options(batch_size=batch_size, batch_tokens=batch_tokens, chunk_lines=chunk_lines, cache=cache,
                   precision=precision, workers=workers, cpus_per_worker=cpus_per_worker,
                   gpus_per_worker=gpus_per_worker, lang=lang, pipeline=pipeline)
    if not (shard or resume):  # (a shard's file and a resumed output are checked where they are opened)
        try:
            check_output_before_work(output_path, output_format, overwrite)  # before the model is loaded
        except DumpError as err:
            fail(str(err))
    weights = model_source(weights)  # "embedded": None, the embedded model (the Ray workers load it too)
    layers, weights_text = _layer_options(layers, layer_weights, mix)
    weights_list = None
    if weights_text:
        try:
            weights_list = [float(x) for x in weights_text.split(",")]
        except ValueError:
            fail(f"--layer-weights must be comma-separated numbers, got {weights_text!r}")
    if engine == "ray":
        if shard:
            fail("--shard is for --engine local; Ray shares the work between its --workers itself")
        _embed_on_ray(
            input_paths, output_path, weights=weights, input_format=input_format, lang=lang, pipeline=pipeline,
            output_format=output_format, sentence_index=sentence_index, layers=layers, layer_weights=weights_list,
            batch_size=batch_size, batch_tokens=batch_tokens, chunk_lines=chunk_lines, resume=resume,
            overwrite=overwrite, workers=workers, address=address, cpus_per_worker=cpus_per_worker,
            gpus_per_worker=gpus_per_worker, cache=cache, precision=precision, backend=backend,
            encoding_errors=encoding_errors, quiet=quiet,
        )
        return
    torchrun, k, n, gpu_id = _shard_of_run(shard, gpu_id)  # torchrun: process 0 joins every process's shard
    if n > 1 and output_format == "hdf5":
        _check_sharded_output(output_path, join_target=torchrun, overwrite=overwrite, resume=resume)
    loaded = load_weights_or_fail(weights)
    model = loaded.bilm.to(pick_device(gpu_id))
    try:
        model.backend = backend
    except BackendError as err:
        fail(f"--backend: {err}")
    try:
        check_layers(layers, weights_list, model.n_layers, model.width)
    except DumpError as err:
        fail(str(err))
    if cache:
        model.enable_cache(cache)
    desc = f"embedding{f' shard {k}/{n}' if n > 1 else ''}"
    bar = progress_bar(desc=desc, unit=" tok", unit_scale=True, disable=quiet)
    with _stopped_runs(output_path, output_format, (k, n), bar):
        path = embed_file(
            model,
            input_paths,
            output_path,
            layers=layers,
            layer_weights=weights_list,
            batch_tokens=batch_tokens,
            batch_size=batch_size,
            chunk_lines=chunk_lines,
            shard=(k, n),
            resume=resume,
            overwrite=overwrite,
            precision=precision,
            encoding_errors=encoding_errors,
            input_format=input_format,
            lang=lang,
            pipeline=pipeline,
            sentence_index=sentence_index,
            output_format=output_format,
            on_progress=lambda tokens, sentences: bar.update(tokens),
        )
    if torchrun:
        import torch.distributed as dist

        wait_for_every_shard()
        try:
            if k == 0 and output_format == "hdf5":
                try:
                    # the join is part of this run
                    joined = join_shards(output_path, n, overwrite=overwrite or resume)
                except DumpError as err:
                    fail(str(err))
                msg.good(f"Wrote {joined} ({n} shards)")
        finally:
            dist.destroy_process_group()
        return
    msg.good(f"Wrote {path}")


ENGINES = ("local", "ray")
# How long a process that finished its shard waits for the others under torchrun. Shards differ in
# size, so one may finish hours before another: torch's default (30 minutes) crashed such runs.
SHARD_WAIT = timedelta(days=7)


def wait_for_every_shard() -> None:
    """Under torchrun: join the (gloo) process group, created only now that this process's shard is
    done, and wait at a barrier until every process's is, for up to `SHARD_WAIT`."""
    import torch.distributed as dist

    from ..pretrain.distributed import join_process_group

    if not dist.is_initialized():
        join_process_group("gloo", timeout=SHARD_WAIT)
    dist.barrier()


def _shard_of_run(shard: Optional[str], gpu_id: int) -> Tuple[bool, int, int, int]:
    """(under torchrun, this run's shard K, of N shards, GPU): from --shard K/N, else from torchrun's
    WORLD_SIZE and RANK (and LOCAL_RANK where it picks the GPU). A bad --shard, or a missing or
    malformed variable (WORLD_SIZE without RANK was a raw KeyError), ends the command with one line."""
    from ..pretrain.distributed import LaunchError, launched_local_rank, launched_rank, launched_world_size

    if shard:
        try:
            k, n = (int(x) for x in shard.split("/"))
        except ValueError:
            fail(f"--shard must look like K/N, got {shard!r}")
        return False, k, n, gpu_id
    try:
        world = launched_world_size()
        if world <= 1:
            return False, 0, 1, gpu_id
        k = launched_rank(world)
        if gpu_id < 0 and _cuda():
            gpu_id = launched_local_rank(world)
    except LaunchError as err:
        fail(str(err))
    return True, k, world, gpu_id


def _check_sharded_output(output_path: str, join_target: bool, overwrite: bool, resume: bool) -> None:
    """Refuse, before any work, what a sharded HDF5 run (--shard K/N, torchrun) could only find out after
    it: an output at a URL (the shards are joined into one local file), and under torchrun
    (`join_target`: process 0 joins the shards into OUTPUT) an existing OUTPUT or OUTPUT.partial
    without --overwrite or --resume, which the join would refuse once every shard was embedded."""
    from ..embedding.dump import DumpError, check_join_target, check_sharded_hdf5_output
    from ..embedding.inputs import local_path

    try:
        check_sharded_hdf5_output(output_path)
        if join_target:
            check_join_target(Path(local_path(output_path)), overwrite=overwrite or resume)
    except DumpError as err:
        fail(str(err))


def _check_options(
    *,
    batch_size: int,
    batch_tokens: int,
    chunk_lines: int,
    cache: int,
    precision: str,
    workers: int,
    cpus_per_worker: int,
    gpus_per_worker: Optional[float],
    lang: Optional[str],
    pipeline: Optional[str],
) -> None:
    """Exit with one message on an option value `embed` cannot work with, before anything is loaded or written.

    The docs promise bad input is reported "before any work": a value found wrong only once
    the run has started (the precision at the first batch, a JSONL tokenizer at the first
    "text") would leave OUTPUT.partial behind, which a corrected rerun then refuses without
    --resume or --overwrite; and some (a cache of -1) were a traceback.
    """
    from ..embedding.dump import DumpError
    from ..embedding.inputs import make_tokenizer

    check_at_least("--batch-size", batch_size, 1)
    check_at_least("--batch-tokens", batch_tokens, 1)
    check_at_least("--chunk-lines", chunk_lines, 1)
    check_at_least("--cache", cache, 0, "0: off")
    check_at_least("--workers", workers, 1)
    check_at_least("--cpus-per-worker", cpus_per_worker, 1)
    check_at_least("--gpus-per-worker", gpus_per_worker, 0)
    if precision not in PRECISIONS:
        fail(f"--precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if lang and pipeline:
        fail("give --lang or --pipeline, not both")
    if lang:
        check_spacy_lang_or_fail(lang)
    elif pipeline:
        try:
            make_tokenizer(None, pipeline)  # loaded once per process: the run reuses it
        except (DumpError, ImportError) as err:  # ImportError: spaCy itself is not installed
            fail(str(err))


def _layer_options(layers: str, layer_weights: Optional[str], mix: Optional[str]) -> Tuple[str, Optional[str]]:
    """(--layers, --layer-weights) in the current spelling. `--layers mix` and `--mix` are the old
    names of `--layers weighted` and `--layer-weights` (a plain weighted sum, where "mix" elsewhere
    means the component's scalar mix): they still work, with one warning line."""
    from ..embedding.dump import DEPRECATED_LAYER_MODES

    old = layers in DEPRECATED_LAYER_MODES or mix is not None
    if mix is not None:
        if layer_weights is not None:
            fail("--mix is the old name of --layer-weights; pass --layer-weights only")
        layer_weights = mix
    if old:
        msg.warn("--layers mix and --mix are now called --layers weighted and --layer-weights (the layers' sum "
                 "with the weights as given, not the component's scalar mix); the old spelling will be removed")
    return DEPRECATED_LAYER_MODES.get(layers, layers), layer_weights


def _embed_on_ray(input_paths: List[str], output_path: str, quiet: bool, **settings: Any) -> None:
    try:
        from ..embedding.ray import embed_files
    except ImportError as err:
        fail(str(err))
    bar = progress_bar(desc="embedding (ray)", unit=" tok", unit_scale=True, disable=quiet)
    with _stopped_runs(output_path, settings["output_format"], (0, 1), bar):
        path = embed_files(input_paths, output_path, progress=not quiet,
                           on_progress=lambda tokens, sentences: bar.update(tokens), **settings)
    msg.good(f"Wrote {path}")


INTERRUPTED = 130  # the exit status of a command stopped by Ctrl-C (128 + SIGINT), as shells report it
TERMINATED = 143  # by SIGTERM (128 + 15): a job scheduler's, `timeout`'s or Kubernetes' stop
HUNG_UP = 129  # by SIGHUP (128 + 1): the terminal closed, an ssh session dropped


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the run is, so that it stops as Ctrl-C stops it: what it started is
    cleaned up or kept for --resume, and one line says which (a SIGTERM used to kill it outright,
    leaving a remote output's local copy in the temporary folder and an empty .partial that the next
    run refused)."""


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise `Terminated` (main thread only; elsewhere nothing
    changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: Any) -> None:
        raise Terminated(signal.Signals(signum).name)

    names = [name for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]
    previous = {name: signal.signal(getattr(signal, name), terminate) for name in names}
    try:
        yield
    finally:
        for name, handler in previous.items():
            signal.signal(getattr(signal, name), handler)


@contextmanager
def _stopped_runs(output_path: str, output_format: str, shard: Tuple[int, int], bar: tqdm) -> Iterator[None]:
    """Run the embedding with each way it can stop said in one line, never a traceback.

    Bad input or settings: the error's message (exit 1). Ctrl-C: what is kept for --resume (exit
    130). A system error mid-run (a full disk, an I/O error): the error and what is kept (exit 1).
    The run's own warnings (a torn .partial moved aside) are printed as lines too.
    """
    from ..embedding.dump import DumpError, DumpWarning, stopped_note

    with warnings.catch_warnings():
        shown = warnings.showwarning

        def show(message: Union[Warning, str], category: Type[Warning], filename: str, lineno: int,
                 file: Optional[TextIO] = None, line: Optional[str] = None) -> None:
            if issubclass(category, DumpWarning):
                msg.warn(str(message))
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        try:
            with _sigterm_as_interrupt():
                yield
        except (DumpError, ImportError) as err:
            bar.close()
            fail(str(err))
        except KeyboardInterrupt as err:
            bar.close()
            note = getattr(err, "note", None) or stopped_note(output_path, output_format, shard)
            name = (err.args[0] if err.args else "SIGTERM") if isinstance(err, Terminated) else None
            code = {"SIGTERM": TERMINATED, "SIGHUP": HUNG_UP}.get(name or "", INTERRUPTED)
            fail(f"Interrupted{f' by {name}' if name else ''}: {note}", code)
        except OSError as err:
            bar.close()
            where = f" ({err.filename})" if err.filename else ""
            fail(f"{err.strerror or err}{where}: {stopped_note(output_path, output_format, shard)}")
        finally:
            bar.close()


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()
