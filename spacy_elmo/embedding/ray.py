"""`embed --engine ray`: the same units, biLM and outputs as the local engine, on Ray Data.

The pipeline: one read task per input file (`from_items` of the files this
run embeds, each read by `InputPlan.file_units`, `chunk_lines` units per
block) -> `map_batches` with `BiLMWorker`, a callable class, on an actor
pool of `workers` actors: each loads the biLM once and embeds a block as the
local engine embeds a chunk (sorted by length, `batch_tokens` and
`batch_size`) -> the driver, which receives the blocks in input order
(`preserve_order`) and writes them through the local engine's sinks (HDF5
or Parquet parts).

A sentence's vectors do not depend on its batch, so the file written equals
a local `embed` bit for bit (same machine kind and backend; in float32: a
bfloat16 or float16 `--precision` may round a sentence differently in
another batch). Resume works as
locally: units already in OUTPUT.partial, or parts already finished, are
read but not embedded again. Local input files are read once on the
driver before the output is opened, as the local engine does; remote ones
(URLs) only the workers read, so a bad one stops the run when one reads
it: the worker hands the error to the driver as a row, which raises it as
the local engine would (one message, no Ray traceback), and the run
removes a .partial it created and wrote no unit into (nothing to resume;
the corrected rerun needs no --overwrite). Settings the workers would only
fail on are checked on the driver before Ray starts: the model, the layer
weights and the backend (`_check_model`); and on a local Ray instance, GPUs
per worker that it does not have (Ray Data would wait for them forever).

`embed_dataset` is the same embedding step for a Ray Dataset a user already
has. Ray is optional: this module imports it when called, and says how to
install it (`pip install "spacy-elmo[ray]"`) when it is missing.
"""
import dataclasses
import functools
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Union

import numpy

from .. import defaults
from ..bilm.engine.bulk import EMBED_BATCH_SENTENCES, EMBED_BATCH_TOKENS
from .dump import (
    InputsLike,
    InputPlan,
    LAYER_MODES,
    Progress,
    Weights,
    check_layers,
    combine_layers,
    embed_skipping_space,
    finish_sink,
    layer_settings,
    model_fingerprint,
    open_sink,
    plan_inputs,
    run_record,
)
from .inputs import DumpError, Unit, is_url, make_tokenizer
from .parquet import broken_import, part_for

if TYPE_CHECKING:
    import pyarrow
    import ray.data
    from ray.data.extensions import ArrowVariableShapedTensorArray

    from .dump import Hdf5Sink
    from .parquet import ParquetSink

RAY_MISSING = 'embedding on Ray needs Ray Data, which is not installed: pip install "spacy-elmo[ray]"'


def require_ray() -> ModuleType:
    """The `ray` module with Ray Data, or an ImportError saying how to install it."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as err:
        if getattr(err, "name", None) in ("ray", "ray.data"):
            raise ImportError(RAY_MISSING) from None
        raise ImportError(broken_import("Ray Data", err, "ray[data]>=2.35")) from None
    except Exception as err:  # an install that fails on import (an old Ray under a newer pyarrow or pandas)
        raise ImportError(broken_import("Ray Data", err, "ray[data]>=2.35")) from None
    return ray


@dataclass
class EmbedSettings:
    """What every worker needs to build its biLM and embed as the local engine does (picklable).

    `mix` is the old name of `layer_weights` (and `layers="mix"` of "weighted"): read into them,
    with a FutureWarning, so workers only ever see the current spelling.
    """

    weights: Optional[str] = None
    layers: str = "all"
    layer_weights: Optional[List[float]] = None
    batch_tokens: int = EMBED_BATCH_TOKENS
    batch_size: int = EMBED_BATCH_SENTENCES
    precision: str = "float32"
    backend: str = defaults.BACKEND
    cache: int = defaults.TOKEN_CACHE_SIZE
    threads: int = 1
    gpu: bool = False
    mix: Optional[List[float]] = None

    def __post_init__(self) -> None:
        # 1: layer_settings, 2: here, 3: the dataclass's __init__, 4: who built the settings
        self.layers, self.layer_weights = layer_settings(self.layers, self.layer_weights, self.mix, stacklevel=4)
        self.mix = None


class BiLMWorker:
    """One biLM per Ray actor: `__call__` embeds a block of rows, adding `output_column`.

    Rows whose `skip_column` is false pass through with an empty array (the
    CLI's resume: their vectors are already written). Tokens that are empty or
    only whitespace get zero rows, as in the local engine (`embed_skipping_space`).
    """

    def __init__(self, settings: EmbedSettings, column: str = "tokens", output_column: str = "elmo",
                 skip_column: Optional[str] = None) -> None:
        import torch

        from ..layers.loaders import read_weights

        torch.set_num_threads(max(1, settings.threads))
        self.settings = settings
        self.column, self.output_column, self.skip_column = column, output_column, skip_column
        model = read_weights(settings.weights or None).bilm
        device = "cuda" if settings.gpu and torch.cuda.is_available() else "cpu"
        self.model = model.to(device)
        self.model.backend = settings.backend
        if settings.cache:
            self.model.enable_cache(settings.cache)

    def __call__(self, batch: "pyarrow.Table") -> Any:
        s = self.settings
        check_layers(s.layers, s.layer_weights, self.model.n_layers, self.model.width)  # a task error names it
        tokens = batch.column(self.column).to_pylist()
        todo = batch.column(self.skip_column).to_pylist() if self.skip_column else [True] * len(tokens)
        positions = [i for i, wanted in enumerate(todo) if wanted]
        empty = combine_layers(numpy.zeros((self.model.n_layers, 0, self.model.width), numpy.float32), s.layers,
                               s.layer_weights)
        results: List[numpy.ndarray] = [empty] * len(tokens)
        sentences = [[str(t) for t in tokens[i]] for i in positions]
        for indices, arrays in embed_skipping_space(self.model, sentences, s.batch_tokens, s.batch_size,
                                                    s.precision):
            for i, array in zip(indices, arrays):
                results[positions[i]] = combine_layers(array, s.layers, s.layer_weights)
        if self.output_column in batch.column_names:
            batch = batch.drop_columns([self.output_column])
        return batch.append_column(self.output_column, tensor_column(results))


def tensor_column(arrays: Sequence[numpy.ndarray]) -> "ArrowVariableShapedTensorArray":
    """Arrays of one dtype and rank as Ray's variable-shaped tensor column (always that type, so
    every block of a dataset has the same schema, whatever its rows' lengths)."""
    from ray.data.extensions import ArrowVariableShapedTensorArray

    column = numpy.empty(len(arrays), dtype=object)
    for i, array in enumerate(arrays):
        column[i] = array
    return ArrowVariableShapedTensorArray.from_numpy(column)


def _embed_step(ds: "ray.data.Dataset", settings: EmbedSettings, workers: int, cpus_per_worker: int,
                gpus_per_worker: float, rows_per_batch: int, column: str, output_column: str,
                skip_column: Optional[str] = None) -> "ray.data.Dataset":
    import ray.data

    if workers < 1:
        raise DumpError(f"--workers must be >= 1, got {workers}")
    return ds.map_batches(
        BiLMWorker,
        fn_constructor_kwargs={"settings": settings, "column": column, "output_column": output_column,
                               "skip_column": skip_column},
        compute=ray.data.ActorPoolStrategy(size=workers),
        batch_size=rows_per_batch,
        batch_format="pyarrow",
        num_cpus=cpus_per_worker,
        num_gpus=gpus_per_worker,
    )


def _gpus(ray: ModuleType, gpus_per_worker: Optional[float]) -> float:
    if gpus_per_worker is not None:
        return gpus_per_worker
    return 1.0 if ray.cluster_resources().get("GPU", 0) > 0 else 0.0


def embed_dataset(
    ds: "ray.data.Dataset",
    weights: Optional[str] = None,
    column: str = "tokens",
    text_column: Optional[str] = None,
    lang: Optional[str] = None,
    pipeline: Optional[str] = None,
    output_column: str = "elmo",
    layers: str = "all",
    layer_weights: Weights = None,
    workers: int = 1,
    cpus_per_worker: int = 1,
    gpus_per_worker: Optional[float] = None,
    rows_per_batch: int = 4096,
    batch_tokens: int = EMBED_BATCH_TOKENS,
    batch_size: int = EMBED_BATCH_SENTENCES,
    precision: str = "float32",
    backend: str = defaults.BACKEND,
    cache: int = defaults.TOKEN_CACHE_SIZE,
    mix: Weights = None,
) -> "ray.data.Dataset":
    """`ds` with `output_column` added: each row's vectors, (L+1, n_tokens, width) float32
    (or (n_tokens, width) for `layers` top, average or weighted, the last summing the layers with
    `layer_weights` as given; `layers="mix"`, `mix=`: the old spelling of it).

    column: a column of token lists; or text_column: a column of texts,
    tokenized with `spacy.blank(lang)` or a pipeline's tokenizer (`pipeline`)
    into `column` first. One biLM per actor of a pool of `workers`, with
    `cpus_per_worker` torch threads and `gpus_per_worker` GPUs each (default:
    1 where the cluster has GPUs). Lazy, as Ray Datasets are: nothing runs
    until the result is consumed. The vectors equal `BiLM.embed`'s.
    """
    ray = require_ray()
    layers, layer_weights = layer_settings(layers, layer_weights, mix)
    if layers not in LAYER_MODES:
        raise DumpError(f"unknown layer mode {layers!r}; choose from {LAYER_MODES}")
    check_backend_name(backend)
    if text_column is not None:
        if not (lang or pipeline):
            raise DumpError("text_column needs a tokenizer: pass lang or pipeline")
        ds = ds.map_batches(functools.partial(_tokenize_batch, text_column=text_column, column=column, lang=lang,
                                              pipeline=pipeline), batch_format="pyarrow")
    settings = EmbedSettings(weights, layers, layer_weights, batch_tokens, batch_size, precision, backend, cache,
                             cpus_per_worker, False)
    gpus = _gpus(ray, gpus_per_worker)
    settings.gpu = gpus > 0
    return _embed_step(ds, settings, workers, cpus_per_worker, gpus, rows_per_batch, column, output_column)


def _tokenize_batch(batch: "pyarrow.Table", text_column: str, column: str, lang: Optional[str],
                    pipeline: Optional[str]) -> "pyarrow.Table":
    import pyarrow

    tokenizer = make_tokenizer(lang, pipeline)
    tokens = [tokenizer(text or "") for text in batch.column(text_column).to_pylist()]
    if column in batch.column_names:
        batch = batch.drop_columns([column])
    return batch.append_column(column, pyarrow.array(tokens, type=pyarrow.list_(pyarrow.string())))


# -- the command line's run ----------------------------------------------------------------------------


@dataclass
class _Skip:
    """Which units a resumed run reads but does not embed (HDF5 keys) or leaves out (Parquet parts)."""

    keys: Set[str] = field(default_factory=set)
    parts: Set[str] = field(default_factory=set)
    part_of: Optional[Callable[[Unit], str]] = None
    keep_known: bool = True  # emit skipped HDF5 units anyway, for sentence_to_index


def _read_file(batch: Dict[str, numpy.ndarray], plan: InputPlan, skip: _Skip,
               chunk_lines: int) -> Iterator[Dict[str, list]]:
    """The rows of the input files in `batch` (one), `chunk_lines` at a time.

    Bad input (a DumpError: a line that is not UTF-8, a JSONL line without tokens, ...) ends the
    file's rows with one row carrying the message in `error`, which the driver raises (`_drain`):
    raised here, it would be a failed Ray task, which Ray Data logs with a long traceback of its own
    code and a retry advice that does not apply to a bad file.
    """
    for i in batch["file"]:
        rows: Dict[str, list] = {name: [] for name in _COLUMNS}
        try:
            for key, unit in plan.file_units(int(i)):
                if skip.part_of is not None and skip.part_of(unit) in skip.parts:
                    continue
                todo = key not in skip.keys
                if not (todo or skip.keep_known):
                    continue
                for name, value in zip(_COLUMNS, (key, unit.file, unit.number, unit.doc, unit.start, unit.text,
                                                  unit.tokens, todo, "")):
                    rows[name].append(value)
                if len(rows["key"]) >= chunk_lines:
                    yield rows
                    rows = {name: [] for name in _COLUMNS}
        except DumpError as err:
            for name, value in zip(_COLUMNS, ("", int(i), -1, -1, -1, "", [], False, str(err) or repr(err))):
                rows[name].append(value)
            yield rows
            return
        if rows["key"]:
            yield rows


_COLUMNS = ("key", "file", "number", "doc", "start", "text", "tokens", "todo", "error")


def connect(address: Optional[str], num_cpus: int) -> bool:
    """Join the cluster at `address`, or start a local Ray instance with `num_cpus` CPUs; a
    process already connected stays as it is. True when this call connected (so should shut down)."""
    ray = require_ray()
    if ray.is_initialized():
        return False
    if address:
        ray.init(address=address)
    else:
        ray.init(num_cpus=num_cpus, include_dashboard=False)
    return True


def embed_files(
    inputs: InputsLike,
    output_path: Union[str, Path],
    weights: Optional[str] = None,
    input_format: Optional[str] = None,
    lang: Optional[str] = None,
    pipeline: Optional[str] = None,
    output_format: str = "hdf5",
    sentence_index: bool = True,
    layers: str = "all",
    layer_weights: Weights = None,
    batch_size: int = EMBED_BATCH_SENTENCES,
    batch_tokens: int = EMBED_BATCH_TOKENS,
    chunk_lines: int = 4096,
    resume: bool = False,
    overwrite: bool = False,
    workers: int = 1,
    address: Optional[str] = None,
    cpus_per_worker: int = 1,
    gpus_per_worker: Optional[float] = None,
    cache: int = defaults.TOKEN_CACHE_SIZE,
    precision: str = "float32",
    backend: str = defaults.BACKEND,
    encoding_errors: str = "strict",
    progress: bool = False,
    on_progress: Progress = None,
    mix: Weights = None,
) -> Union[Path, str]:
    """`embed_file` on Ray Data: the same input, settings and output file; see the module docstring.

    Without `address` it starts a local Ray instance (`workers *
    cpus_per_worker` CPUs) and shuts it down at the end; a process already
    connected to Ray keeps its connection. `progress`: Ray Data's own
    progress bars. `layers="mix"`, `mix=`: the old spelling of "weighted", `layer_weights=`.
    """
    ray = require_ray()
    layers, layer_weights = layer_settings(layers, layer_weights, mix)
    if layers not in LAYER_MODES:
        raise DumpError(f"unknown layer mode {layers!r}; choose from {LAYER_MODES}")
    if workers < 1 or cpus_per_worker < 1:
        raise DumpError(f"--workers and --cpus-per-worker must be >= 1, got {workers} and {cpus_per_worker}")
    plan = plan_inputs(inputs, input_format, (0, 1), encoding_errors, lang, pipeline, output=output_path)
    _check_local_inputs(plan)
    model_id = _check_model(weights, layers, layer_weights, backend, here=not address)
    record = run_record(model_id, layers, layer_weights, precision, plan, backend)
    sink = open_sink(output_path, output_format, plan, layers, chunk_lines, sentence_index, resume, overwrite,
                     record)
    skip = _Skip()
    if output_format == "parquet":
        part_of = functools.partial(part_for, chunk_lines=chunk_lines, shard=plan.unit_shard)
        skip.parts, skip.part_of, skip.keep_known = set(sink.done), part_of, False
    else:
        skip.keys, skip.keep_known = set(sink.done), sentence_index
    started = False
    context = ray.data.DataContext.get_current()
    saved = (context.execution_options.preserve_order, context.enable_progress_bars)
    try:
        started = connect(address, workers * cpus_per_worker)
        context.execution_options.preserve_order = True
        context.enable_progress_bars = progress
        gpus = _gpus(ray, gpus_per_worker)
        if started and not address:
            _check_local_gpus(ray, gpus, workers)
        settings = EmbedSettings(weights, layers, layer_weights, batch_tokens, batch_size, precision, backend,
                                 cache, cpus_per_worker, gpus > 0)
        files = [{"file": i} for i in plan.mine]
        if files:
            ds = _from_items(ray, files)
            ds = ds.map_batches(functools.partial(_read_file, plan=plan, skip=skip, chunk_lines=chunk_lines),
                                batch_size=1, batch_format="numpy", num_cpus=0)
            ds = _embed_step(ds, settings, workers, cpus_per_worker, gpus, chunk_lines, "tokens", "elmo", "todo")
            _drain(ds, plan, sink, chunk_lines, on_progress)
    except BaseException as err:
        sink.close()  # a .partial this run created and wrote nothing into goes, so the corrected rerun is plain
        cause = _cause(err)
        if isinstance(cause, DumpError):
            message = cause_message(cause)
            kept = _kept(sink)
            raise DumpError(f"{message} ({kept})" if kept else message) from None
        raise
    finally:
        context.execution_options.preserve_order, context.enable_progress_bars = saved
        if started:
            ray.shutdown()
    return finish_sink(sink)


# what Ray Data appends to the message of an exception that a task raised
_RAY_SUFFIX = "\nFailed to "


def _check_local_inputs(plan: InputPlan) -> None:
    """Read the local input files once on the driver, as the local engine does, so that a bad one fails
    before the output is opened or Ray started; remote ones (URLs) only the workers read (`_read_file`)."""
    dataclasses.replace(plan, mine=[i for i in plan.mine if not is_url(plan.files[i])]).check()


def _kept(sink: Union["Hdf5Sink", "ParquetSink"]) -> str:
    """What a run stopped by bad input kept for --resume (units written before the bad one), or ""."""
    work = getattr(sink, "work", None)
    if work is not None:
        return f"{work} keeps the units embedded before it: add --resume to the rerun" if work.exists() else ""
    if getattr(sink, "parts_written", 0):
        return "the parts finished before it are kept: add --resume to the rerun to skip them"
    return ""


def cause_message(cause: BaseException) -> str:
    """A DumpError's own message, without the retry advice Ray Data appends to a task's exception
    ("Failed to apply UDF transform after 1/1 attempts ...", which is no advice for bad input)."""
    return str(cause).split(_RAY_SUFFIX, 1)[0]


def _check_model(weights: Optional[str], layers: str, layer_weights: Weights, backend: str = defaults.BACKEND,
                 here: bool = True) -> str:
    """Load the model once on the driver: bad `weights`, layer weights or `backend` fail here, with the
    local engine's message, before Ray starts (and a download lands in this node's cache before the
    workers ask). Returns the model's fingerprint (`dump.model_fingerprint`), which the output records.

    `here`: the workers run on this machine (a local Ray instance), so the backend is set on the
    driver's model as each worker will set it, which also checks that it can run; on a cluster's
    machines it may run where this one cannot, so only its name is checked (`check_backend_name`).
    A bad backend found by the workers alone was a failed actor per worker, each a long traceback."""
    from ..bilm.engine import BackendError
    from ..io import WeightsError
    from ..layers.loaders import read_weights

    check_backend_name(backend)
    try:
        model = read_weights(weights or None).bilm
    except WeightsError as err:
        raise DumpError(str(err)) from None
    check_layers(layers, layer_weights, model.n_layers, model.width)
    if here:
        try:
            model.backend = backend
        except BackendError as err:
            raise DumpError(f"--backend: {err}") from None
    return model_fingerprint(model)


def check_backend_name(backend: str) -> None:
    """A DumpError ("--backend: ...", one line) for a backend name no machine knows."""
    from ..bilm.engine.backends import AUTO, NAMES, unavailable_reason

    if backend != AUTO and backend not in NAMES:
        raise DumpError(f"--backend: backend {backend!r}: {unavailable_reason(backend)}")  # the local engine's words


def _check_local_gpus(ray: ModuleType, gpus_per_worker: float, workers: int) -> None:
    """Refuse GPUs per worker that the local Ray instance (this machine's) does not have: Ray Data would
    wait for the actors forever (its pool waits for all `workers` to start), printing warnings.
    Only for an instance this run started: a cluster (`address`) may add GPU machines on demand."""
    if gpus_per_worker <= 0:
        return
    have = float(ray.cluster_resources().get("GPU", 0))
    needed = gpus_per_worker * workers
    if have < needed:
        raise DumpError(
            f"--gpus-per-worker {gpus_per_worker:g} x --workers {workers} needs {needed:g} GPU(s), and this "
            f"machine's Ray instance has {have:g}: ask for fewer (--gpus-per-worker 0 runs on CPUs), or pass "
            "--address of a Ray cluster with GPUs"
        )


def _from_items(ray: ModuleType, items: List[dict]) -> "ray.data.Dataset":
    try:
        return ray.data.from_items(items, override_num_blocks=len(items))
    except TypeError:  # Ray before 2.10 names it `parallelism`
        return ray.data.from_items(items, parallelism=len(items))


def _drain(ds: "ray.data.Dataset", plan: InputPlan, sink: Union["Hdf5Sink", "ParquetSink"], chunk_lines: int,
           on_progress: Progress) -> None:
    """Write the pipeline's rows, in input order, through `sink`, ending a chunk as the local engine does."""
    written = 0
    current = None
    for batch in ds.iter_batches(batch_size=None, batch_format="numpy"):
        n_tokens = n_units = 0
        for row in range(len(batch["key"])):
            if batch["error"][row]:  # bad input, found by the worker that read it (`_read_file`)
                raise DumpError(str(batch["error"][row]))
            key = str(batch["key"][row])
            tokens = [str(t) for t in batch["tokens"][row]]
            unit = Unit(int(batch["file"][row]), int(batch["number"][row]), tokens, str(batch["text"][row]),
                        int(batch["doc"][row]), int(batch["start"][row]))
            if not sink.accept(key, unit) or not batch["todo"][row]:
                continue
            chunk = sink.chunk_key(unit)
            if written and chunk != current:
                sink.end_chunk()
                written = 0
            current = chunk
            sink.write(key, plan.files[unit.file], unit, numpy.asarray(batch["elmo"][row], dtype=numpy.float32))
            written += 1
            n_tokens += len(tokens)
            n_units += 1
            if written >= chunk_lines:
                sink.end_chunk()
                written = 0
        if on_progress is not None and n_units:
            on_progress(n_tokens, n_units)
    if written:
        sink.end_chunk()


def _cause(err: BaseException) -> Optional[BaseException]:
    """The DumpError (bad input or settings) behind a Ray task failure, if that is what it is."""
    seen = set()
    stack: List[Any] = [err]
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, DumpError) and type(current) is DumpError:
            return current
        stack += [getattr(current, "cause", None), current.__cause__, current.__context__]
    return None


__all__ = ["embed_dataset", "embed_files", "BiLMWorker", "EmbedSettings", "connect", "require_ray", "RAY_MISSING"]
