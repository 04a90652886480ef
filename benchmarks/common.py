"""Shared benchmark helpers: real sentences, the machine's matmul rate, FLOP counts, memory."""
import os
import platform
import resource
import time
from pathlib import Path
from typing import List

import torch

from spacy_elmo.bilm import BiLM, BiLMConfig, published_shapes

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("SPACY_ELMO_DATA", ROOT.parent / "shared" / "data"))
EWT_TRAIN = DATA / "ud_en_ewt" / "en_ewt-ud-train.conllu.gz"


def ewt_sentences(limit: int = 0, path: Path = EWT_TRAIN) -> List[List[str]]:
    """Token lists of EWT sentences (syntactic words, as CoNLL-U gives them)."""
    from spacy_elmo.corpora import conllu_words

    if not path.exists():
        raise SystemExit(f"needs {path} (set SPACY_ELMO_DATA)")
    return conllu_words(path, limit)


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


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (MiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


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
