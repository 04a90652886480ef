"""`ray`: `embed` on the local engine against `--engine ray` with 1 and 2 workers, in one run.

Tokens/s of each (the local engine at 1 thread and at as many threads as the
2 Ray workers have CPUs), their ratios, Ray's start-up cost (`ray.init`, and
the fixed cost of one pipeline: actors started, the biLM loaded in each, a
one-line input embedded), the peak resident memory of each worker actor
(its process sampled every 0.2 s) and a bit-for-bit check of every Ray dump
against the local one. Random weights of the published small shapes,
saved as a native model for the workers to load; the first --sentences of
EWT train. `--smoke`: a tiny biLM on 40 made-up sentences, to check that the
section runs (its figures mean nothing). Needs `spacy-elmo[ray]` and psutil.
"""
import tempfile
import threading
from pathlib import Path
from typing import Dict, List, Tuple

import numpy
import torch
from common import ewt_sentences, peak_rss_mb, random_model, table, timed, write_sentences

from spacy_elmo.bilm import BiLM, BiLMConfig
from spacy_elmo.io import save_native

SAMPLE_SECONDS = 0.2


class WorkerMemory:
    """Peak RSS (MiB) of every Ray biLM worker process, sampled on a thread while a run lasts."""

    def __init__(self) -> None:
        self.peaks: Dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        import psutil

        while not self._stop.is_set():
            for process in psutil.process_iter(["pid", "cmdline", "memory_info"]):
                cmdline = " ".join(process.info.get("cmdline") or [])
                memory = process.info.get("memory_info")
                if "BiLMWorker" in cmdline and memory is not None:
                    pid = process.info["pid"]
                    self.peaks[pid] = max(self.peaks.get(pid, 0.0), memory.rss / 2**20)
            self._stop.wait(SAMPLE_SECONDS)

    def __enter__(self) -> "WorkerMemory":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def _inputs(args) -> Tuple[BiLM, List[List[str]]]:
    if args.smoke:
        config = BiLMConfig(lstm_dim=16, projection_dim=8, n_layers=2, filters=((1, 4), (2, 4)), n_highway=1,
                            char_embedding_dim=4)
        model = BiLM(config)
        model.reset_parameters(0)
        rng = numpy.random.default_rng(0)
        words = ["the", "cat", "sat", "on", "a", "mat", "river", "bank", ",", "."]
        return model, [list(rng.choice(words, size=int(rng.integers(0, 20)))) for _ in range(40)]
    return random_model("small"), ewt_sentences(args.sentences)


def _same(a: Path, b: Path) -> bool:
    import h5py

    with h5py.File(a, "r") as x, h5py.File(b, "r") as y:
        keys = sorted(k for k in x.keys() if k != "sentence_to_index")
        return keys == sorted(k for k in y.keys() if k != "sentence_to_index") and all(
            numpy.array_equal(x[k][...], y[k][...]) for k in keys) and x["sentence_to_index"][0] == \
            y["sentence_to_index"][0]


def run(args) -> str:
    try:
        import psutil  # noqa: F401
        import ray

        from spacy_elmo.embedding.ray import embed_files
    except ImportError as err:
        return f"### Ray Data engine\n\nskipped: {err} (pip install \"spacy-elmo[ray]\" psutil)\n"
    from spacy_elmo.embedding.dump import embed_file

    model, sentences = _inputs(args)
    n_tokens = sum(map(len, sentences))
    chunk_lines = max(1, len(sentences) // 16)  # blocks enough for two workers to share
    threads_before = torch.get_num_threads()
    rows: List[List[str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        text = write_sentences(sentences, folder)
        one_line = folder / "one.txt"
        one_line.write_text(" ".join(sentences[0]) + "\n")
        weights = folder / "model"
        save_native(weights, model)
        speeds: Dict[str, float] = {}
        for threads in (1, 2):
            torch.set_num_threads(threads)
            model.enable_cache(50_000)
            out = folder / f"local-{threads}.hdf5"
            _, seconds = timed(lambda: embed_file(model, text, out, chunk_lines=chunk_lines))
            model.disable_cache()
            speeds[f"local, {threads} thread(s)"] = n_tokens / seconds
            rows.append([f"local, {threads} thread(s)", f"{n_tokens / seconds:,.0f}", f"{seconds:.1f}", "", ""])
        torch.set_num_threads(threads_before)
        _, init_seconds = timed(lambda: ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False))
        try:
            fixed: Dict[int, float] = {}
            identical = []
            for workers in (1, 2):
                _, fixed[workers] = timed(lambda: embed_files(one_line, folder / f"one-{workers}.hdf5",
                                                              weights=str(weights), workers=workers))
                out = folder / f"ray-{workers}.hdf5"
                with WorkerMemory() as memory:
                    _, seconds = timed(lambda: embed_files(text, out, weights=str(weights), workers=workers,
                                                           chunk_lines=chunk_lines))
                identical.append(_same(folder / "local-1.hdf5", out))
                speeds[f"ray, {workers} worker(s)"] = n_tokens / seconds
                peak = max(memory.peaks.values()) if memory.peaks else float("nan")
                rows.append([f"ray, {workers} worker(s) of 1 CPU", f"{n_tokens / seconds:,.0f}", f"{seconds:.1f}",
                             f"{peak:,.0f} ({len(memory.peaks)} processes seen)", f"{fixed[workers]:.1f}"])
        finally:
            ray.shutdown()
    local1 = speeds["local, 1 thread(s)"]
    ratios = [
        ["ray 1 worker / local 1 thread", f"{speeds['ray, 1 worker(s)'] / local1:.2f}x"],
        ["ray 2 workers / local 1 thread", f"{speeds['ray, 2 worker(s)'] / local1:.2f}x"],
        ["ray 2 workers / local 2 threads", f"{speeds['ray, 2 worker(s)'] / speeds['local, 2 thread(s)']:.2f}x"],
        ["ray 2 workers / ray 1 worker", f"{speeds['ray, 2 worker(s)'] / speeds['ray, 1 worker(s)']:.2f}x"],
    ]
    header = ["engine", "tokens/s", "seconds", "peak RSS per worker (MiB)", "fixed cost of a run (s)"]
    return (
        f"### Ray Data engine: `embed` local vs `--engine ray` ({len(sentences):,} sentences, {n_tokens:,} tokens"
        f"{', smoke run: figures meaningless' if args.smoke else ', small shapes'})\n\n"
        + table(rows, header)
        + "\n\n" + table(ratios, ["ratio", "speed"])
        + f"\n\nRay start-up: `ray.init` (2 CPUs, no dashboard) {init_seconds:.1f} s; the fixed cost of a run is "
        "one `embed --engine ray` of a one-line file (actors started, the biLM loaded in each). Every Ray dump "
        f"equals the local one bit for bit: {'yes' if all(identical) else 'NO'}. Peak RSS of this driver "
        f"process: {peak_rss_mb():,.0f} MiB.\n"
    )
