"""Shared benchmark helpers: real sentences, the machine's matmul rate, FLOP counts, memory,
`embed` timings, and child processes running this checkout or a baseline revision."""
import argparse
import contextlib
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, TypeVar

import torch

from spacy_elmo.bilm import BiLM, BiLMConfig

try:
    from spacy_elmo.io.options import published_shapes
except ImportError:  # a baseline checkout (`compare`) whose spacy_elmo has it in the model package
    from spacy_elmo.bilm import published_shapes  # type: ignore[attr-defined,no-redef]

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("SPACY_ELMO_DATA", ROOT.parent / "shared" / "data"))
EWT_TRAIN = DATA / "ud_en_ewt" / "en_ewt-ud-train.conllu.gz"


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse `type`: an integer >= `minimum`, else argparse's one-line usage error (exit 2)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {minimum} or more, got {value}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


POSITIVE = at_least(1)  # a count of runs, rounds, steps, ...
COUNT = at_least(0)  # a count where 0 has a meaning of its own (documented in the option's --help: "0: all")


@contextlib.contextmanager
def one_line_errors() -> Iterator[None]:
    """The package's errors about what a user gave (a model, a config, a teacher) as one line
    (SystemExit with the message) instead of a traceback."""
    from spacy_elmo.io.errors import WeightsError
    from spacy_elmo.pretrain.distill import DistillError
    from spacy_elmo.pretrain.settings import SettingsError

    try:
        yield
    except (WeightsError, SettingsError, DistillError) as err:
        raise SystemExit(str(err)) from None


def check_weights(source: Optional[str]) -> None:
    """Refuse, in one line and before any work, a model the `elmo` component could not load
    (None: the embedded biLM, always there)."""
    if source is None:
        return
    from spacy_elmo.io import load_model

    with one_line_errors():
        load_model(source, with_softmax=False)


def check_teacher(name: str) -> Path:
    """A distillation teacher's directory, or a one-line exit where it is neither a directory nor installed."""
    from spacy_elmo.pretrain.distill import resolve_teacher

    with one_line_errors():
        return resolve_teacher(name)


def check_data(path: Path) -> Path:
    """`path`, or a one-line exit naming it where the data set is missing (as `ewt_sentences`)."""
    if not Path(path).exists():
        raise SystemExit(f"needs {path} (set SPACY_ELMO_DATA)")
    return Path(path)


def command_line() -> str:
    """The "Command:" line the benchmarks print under "Machine:"."""
    return f"Command: python {' '.join(sys.argv)}"


def ewt_sentences(limit: int = 0, path: Path = EWT_TRAIN) -> List[List[str]]:
    """Token lists of EWT sentences (syntactic words, as CoNLL-U gives them)."""
    from spacy_elmo.gold_data import conllu_words

    return conllu_words(check_data(path), limit)


def distinct(sentences: Sequence[Sequence[str]]) -> List[List[str]]:
    """The sentences without repeats, in order: the reference computes a repeated sentence again and
    ours once (its embed computes each distinct sentence once), so a speed ratio compares them on these."""
    return [list(s) for s in dict.fromkeys(tuple(s) for s in sentences)]


def matmul_rate(size: int = 2048, seconds: float = 2.0, dtype=torch.float32, device: str = "cpu") -> float:
    """Measured fp32 GEMM rate (FLOP/s) of this machine, torch's current thread count."""
    a = torch.randn(size, size, dtype=dtype, device=device)
    b = torch.randn(size, size, dtype=dtype, device=device)
    for _ in range(3):
        a @ b
    _sync(device)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        a @ b
        n += 1
    _sync(device)
    return 2.0 * size**3 * n / (time.perf_counter() - start)


class RateProbe:
    """Samples the matmul rate during a run: `sample()` times two 2048 x 2048
    fp32 products (~0.3 s) and keeps their rates and the time it took, so the
    caller can leave that time out of its own.

    On this shared machine the rate moves between ~75 and ~150 GFLOP/s from
    one second to the next, so samples taken through a run (e.g. after each
    batch, as a progress callback) say more about the rate it ran at than
    samples before and after it.
    """

    def __init__(self, size: int = 2048) -> None:
        self.size = size
        self.a = torch.randn(size, size)
        self.b = torch.randn(size, size)
        for _ in range(2):
            self.a @ self.b
        self.rates: list = []
        self.seconds = 0.0

    def sample(self, *_ignored) -> None:
        start = time.perf_counter()
        for _ in range(2):
            t = time.perf_counter()
            self.a @ self.b
            self.rates.append(2.0 * self.size**3 / (time.perf_counter() - t))
        self.seconds += time.perf_counter() - start

    def mean(self) -> float:
        return sum(self.rates) / len(self.rates)


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def forward_flops_per_token(config: BiLMConfig) -> dict:
    """Useful FLOPs of one token's forward pass, counted as the reference does the work:
    the character CNN over all max_chars positions, no padding, no reuse."""
    C, d = config.max_characters_per_token, config.char_embedding_dim
    cnn = sum(2 * (C - w + 1) * w * d * n for w, n in config.filters) if config.use_character_inputs else 0
    F, P, H = config.n_filters, config.projection_dim, config.lstm_dim
    highway = config.n_highway * 2 * F * 2 * F if config.use_character_inputs else 0
    projection = 2 * F * P if config.use_character_inputs and F != P else 0
    lstm = config.n_layers * 2 * (2 * P * 4 * H + 2 * P * 4 * H + 2 * H * P)
    return {"char_cnn": cnn, "highway": highway, "projection": projection, "lstm": lstm,
            "total": cnn + highway + projection + lstm}


def random_model(shapes: str, seed: int = 0) -> BiLM:
    model = BiLM(published_shapes(shapes))
    model.reset_parameters(seed)
    model.eval()
    return model


def workload(shapes: str, n_sentences: int) -> Tuple[BiLM, List[List[str]], int, float]:
    """A random biLM of the published `shapes`, the first `n_sentences` of EWT train,
    their number of tokens and the useful FLOPs per token."""
    model = random_model(shapes)
    sentences = ewt_sentences(n_sentences)
    return model, sentences, sum(map(len, sentences)), forward_flops_per_token(model.config)["total"]


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (MiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def peak_mib(status: str = "/proc/self/status") -> float:
    """Peak resident memory of this process's own address space (MiB).

    VmHWM, not ru_maxrss: on Linux ru_maxrss carries over the parent's peak
    through fork and exec, so a child started by a large benchmark process
    would report its parent's peak (tests/regression/test_bench_memory_peak.py).
    Where /proc is missing, ru_maxrss is all there is.
    """
    try:
        with open(status) as lines:
            for line in lines:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


T = TypeVar("T")


def timed(fn: Callable[[], T]) -> Tuple[T, float]:
    """fn's result and the seconds it took."""
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def write_sentences(sentences: Sequence[Sequence[str]], folder: Path) -> Path:
    """The sentences as `embed`'s input: one per line, tokens joined by spaces."""
    text = Path(folder) / "in.txt"
    text.write_text("\n".join(" ".join(s) for s in sentences) + "\n", encoding="utf-8")
    return text


def embed_file_speed(model: BiLM, text: Path, n_tokens: int, probe: Optional["RateProbe"] = None) -> float:
    """Tokens/s of `embed` end to end (a fresh token cache, HDF5 written beside the input).

    With a probe, the matmul rate is sampled after every batch (the progress
    callback) and the time of the samples is left out of the speed."""
    from spacy_elmo.embedding.dump import embed_file

    model.enable_cache(50_000)
    on_progress = None
    if probe is not None:
        probe.sample()
        on_progress = probe.sample
    spent = probe.seconds if probe is not None else 0.0
    _, t = timed(lambda: embed_file(model, text, text.with_name("out.hdf5"), overwrite=True, on_progress=on_progress))
    model.disable_cache()
    if probe is not None:
        t -= probe.seconds - spent
    return n_tokens / t


def scaled_goal(rate: float) -> float:
    """Issue 6's `embed` goal, 10,000 tokens/s at 180 GFLOP/s, scaled to a measured rate."""
    return 10_000 * rate / 180e9


# -- this checkout against a baseline revision, in child processes ----------------------------
def run_child(tree: Path, command: List[str], env: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """Run `command` (a Python program printing one JSON line last) with `tree`'s
    spacy_elmo first on the path; its JSON."""
    done = subprocess.run(command, env={**os.environ, **(env or {}), "PYTHONPATH": str(tree)},
                          capture_output=True, text=True, cwd=str(tree))
    if done.returncode != 0:
        raise SystemExit(f"child run in {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def baseline_tree(revision: str, workdir: Path) -> Path:
    """A git worktree of `revision` under `workdir`, with the optional compiled kernel built."""
    tree = workdir / "baseline"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--force", str(tree), revision], check=True,
                   capture_output=True)
    subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=str(tree), capture_output=True)
    return tree


def remove_tree(tree: Path) -> None:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], capture_output=True)


def merge_base(branch: str = "main") -> str:
    """The commit this checkout branched from `branch` (the default baseline)."""
    out = subprocess.run(["git", "-C", str(ROOT), "merge-base", "HEAD", branch], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"git merge-base HEAD {branch} failed: {out.stderr.strip()}; pass --baseline REV")
    return out.stdout.strip()[:12]


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{platform.machine()} {cpu}, {os.cpu_count()} cores, torch {torch.__version__}, "
            f"{torch.get_num_threads()} threads")


def table(rows: List[List[str]], header: List[str]) -> str:
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |" for r in rows]
    return "\n".join([line, sep] + body)
