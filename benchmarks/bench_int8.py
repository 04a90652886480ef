"""The `int8` engine against float32 (the `auto` engine), in one run: speed, layer differences, probes, a tagger.

    python benchmarks/bench_int8.py [--sections speed,checks,diff,probe,tagger] [--rounds 3]
        [--small-sentences 1000] [--embedded-sentences 3000] [--probe-limit 0] [--tagger-steps 400]

Sections, float32 and int8 alternating wherever both run:

* speed: tokens/s of `embed` end to end (token cache on, HDF5 written,
  common.embed_file_speed) on the first EWT train sentences, for a random
  biLM of the published "small" shapes and for the package's embedded biLM;
  `--rounds` alternating rounds, medians and the ratio of medians;
* checks: the share of int8 `embed` time spent in the NaN/inf checks of
  the layers' and products' inputs (`int8.all_finite`), timed around each call;
* diff: the largest absolute difference of every layer from float32 (and
  the layer's largest magnitude), on the embedded biLM and the small shapes;
  and batch dependence: each of the first 100 sentences embedded alone
  against the same sentence in the batch of all;
* probe: the linear UPOS probe per layer (bench_bilm.linear_probe: EWT
  train -> test, layers 0, 1, 2 and a learned mix) on the embedded biLM;
* tagger: a tagger trained through the listener (the tagger of
  configs/ewt_elmo.cfg alone: ElmoListener + hash embeddings + CNN) for
  `--tagger-steps` steps on EWT train, converted to a temporary DocBin by
  `spacy_elmo corpus ud`, once with `backend = "auto"` and once with
  `backend = "int8"`, the same seed; XPOS tag accuracy on EWT dev and the
  training's wall time.

The decision rule (issue 24): keep int8 as an opt-in backend if it is at
least 1.3x faster on the embedded biLM and the probe moves by at most 0.2
points on every layer. Threads: 1 (torch, OpenMP, MKL).
"""
import os

for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402
import io  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Dict, List, Sequence, Tuple  # noqa: E402

import numpy  # noqa: E402
import torch  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_bilm import EWT, linear_probe, read_upos  # noqa: E402
from common import (  # noqa: E402
    command_line,
    COUNT,
    POSITIVE,
    embed_file_speed,
    ewt_sentences,
    machine,
    random_model,
    table,
    write_sentences,
)

from spacy_elmo.bilm import BiLM  # noqa: E402
from spacy_elmo.bilm.engine import backends  # noqa: E402

FLOAT, INT8 = "auto", "int8"
SECTIONS = ("speed", "checks", "diff", "probe", "tagger")

TAGGER_CONFIG = """
[paths]
train = null
dev = null

[system]
gpu_allocator = null
seed = 0

[nlp]
lang = "en"
pipeline = ["elmo", "tagger"]
batch_size = 1000

[components]

[components.elmo]
factory = "elmo"
frozen = true

[components.elmo.model]
@architectures = "spacy-elmo.ElmoBiLM.v1"
backend = "auto"

[components.tagger]
factory = "tagger"
label_smoothing = 0.05

[components.tagger.model]
@architectures = "spacy.Tagger.v2"
nO = null
normalize = false

[components.tagger.model.tok2vec]
@architectures = "spacy-elmo.ElmoTok2Vec.v1"
width = 96
maxout_pieces = 3

[components.tagger.model.tok2vec.elmo]
@architectures = "spacy-elmo.ElmoListener.v1"
upstream = "elmo"
dropout = 0.5
grad_factor = 1.0

[components.tagger.model.tok2vec.embed]
@architectures = "spacy.MultiHashEmbed.v2"
width = 96
attrs = ["NORM", "PREFIX", "SUFFIX", "SHAPE"]
rows = [5000, 1000, 2500, 2500]
include_static_vectors = false

[components.tagger.model.tok2vec.encode]
@architectures = "spacy.MaxoutWindowEncoder.v2"
width = 96
depth = 4
window_size = 1
maxout_pieces = 3

[corpora]

[corpora.train]
@readers = "spacy.Corpus.v1"
path = ${paths.train}

[corpora.dev]
@readers = "spacy.Corpus.v1"
path = ${paths.dev}

[training]
dev_corpus = "corpora.dev"
train_corpus = "corpora.train"
seed = ${system.seed}
gpu_allocator = ${system.gpu_allocator}
dropout = 0.1
max_epochs = 0
max_steps = 400
eval_frequency = 400
patience = 0

[training.optimizer]
@optimizers = "Adam.v1"
L2 = 0.01
grad_clip = 1.0
learn_rate = 0.001

[training.batcher]
@batchers = "spacy.batch_by_words.v1"
discard_oversize = false
tolerance = 0.2

[training.batcher.size]
@schedules = "compounding.v1"
start = 100
stop = 1000
compound = 1.001

[training.score_weights]
tag_acc = 1.0

[initialize]

[initialize.components]

[initialize.components.elmo]

[initialize.components.elmo.loader]
@model_loaders = "spacy-elmo.EmbeddedLoader.v1"
"""


def embedded_bilm() -> BiLM:
    from spacy_elmo.io import load_bilm
    from spacy_elmo.resources import default_model_path

    model = load_bilm(default_model_path())
    model.eval()
    return model


# -- speed ---------------------------------------------------------------------------------
def speed(models: Dict[str, BiLM], sentences: Dict[str, List[List[str]]], rounds: int) -> Tuple[str, Dict[str, float]]:
    """`embed` tokens/s, float32 and int8 alternating, per model; and each model's ratio of medians."""
    rows, ratios = [], {}
    for name, model in models.items():
        n_tokens = sum(map(len, sentences[name]))
        speeds: Dict[str, List[float]] = {FLOAT: [], INT8: []}
        with tempfile.TemporaryDirectory() as tmp:
            text = write_sentences(sentences[name], Path(tmp))
            for _ in range(rounds):
                for backend in (FLOAT, INT8):
                    model.backend = backend
                    speeds[backend].append(embed_file_speed(model, text, n_tokens))
        model.backend = FLOAT
        medians = {b: statistics.median(v) for b, v in speeds.items()}
        per_round = ", ".join(f"{i / f:.2f}" for f, i in zip(speeds[FLOAT], speeds[INT8]))
        ratios[name] = medians[INT8] / medians[FLOAT]
        rows.append([name, f"{len(sentences[name]):,} ({n_tokens:,})", f"{medians[FLOAT]:,.0f}",
                     f"{medians[INT8]:,.0f}", f"{medians[INT8] / medians[FLOAT]:.2f}x", per_round])
    return ("#### `embed` tokens/s\n\n" + table(rows, [
        "biLM", "sentences (tokens)", f"float32 ({backends.resolve(FLOAT)})", "int8", "ratio of medians",
        "per-round ratios"])), ratios


# -- the finiteness checks' share -------------------------------------------------------------
def check_share(models: Dict[str, BiLM], sentences: Dict[str, List[List[str]]], batch: int = 64) -> str:
    """The share of int8 `embed` time spent in `int8.all_finite` (the NaN/inf checks of every layer's
    and product's inputs), timed around each call: what the checks cost, without a baseline build."""
    from spacy_elmo.bilm.engine import int8

    real = int8.all_finite
    spent = {"seconds": 0.0, "calls": 0}

    def timed(*tensors: torch.Tensor) -> bool:
        start = time.perf_counter()
        try:
            return real(*tensors)
        finally:
            spent["seconds"] += time.perf_counter() - start
            spent["calls"] += 1

    rows = []
    int8.all_finite = timed
    try:
        for name, model in models.items():
            model.backend = INT8
            model.embed(sentences[name][:batch])  # warm-up: weights packed, kernels loaded
            spent.update(seconds=0.0, calls=0)
            start = time.perf_counter()
            for i in range(0, len(sentences[name]), batch):
                model.embed(sentences[name][i:i + batch])
            total = time.perf_counter() - start
            model.backend = FLOAT
            rows.append([name, f"{len(sentences[name]):,}", f"{total:.2f}", f"{spent['calls']:,}",
                         f"{1000 * spent['seconds']:.1f}", f"{100 * spent['seconds'] / total:.2f}%"])
    finally:
        int8.all_finite = real
    return ("#### int8: time in the finiteness checks (`all_finite`), `BiLM.embed` in batches of "
            f"{batch} sentences\n\n" + table(rows, ["biLM", "sentences", "embed s", "checks", "checks ms", "share"]))


# -- layer differences ---------------------------------------------------------------------
def _embed(model: BiLM, backend: str, sentences: Sequence[List[str]]) -> List[numpy.ndarray]:
    model.backend = backend
    try:
        return model.embed(list(sentences))
    finally:
        model.backend = FLOAT


def differences(models: Dict[str, BiLM], sentences: Dict[str, List[List[str]]], alone: int = 100) -> str:
    """Largest |int8 - float32| per layer, and how far a sentence moves with its batch, per model."""
    alone = min([alone] + [len(s) for s in sentences.values()])  # the header names the count compared
    rows = []
    for name, model in models.items():
        exact = _embed(model, FLOAT, sentences[name])
        approximate = _embed(model, INT8, sentences[name])
        firsts = sentences[name][:alone]
        alone_float = [_embed(model, FLOAT, [s])[0] for s in firsts]
        alone_int8 = [_embed(model, INT8, [s])[0] for s in firsts]
        for layer in range(exact[0].shape[0]):
            def largest(a: Sequence[numpy.ndarray], b: Sequence[numpy.ndarray]) -> float:
                return max(float(numpy.abs(x[layer] - y[layer]).max()) for x, y in zip(a, b))

            mean = statistics.fmean(float(numpy.abs(x[layer] - y[layer]).mean()) for x, y in zip(exact, approximate))
            magnitude = max(float(numpy.abs(x[layer]).max()) for x in exact)
            rows.append([name, str(layer), f"{largest(exact, approximate):.3g}", f"{mean:.3g}", f"{magnitude:.3g}",
                         f"{largest(alone_float, exact):.3g}", f"{largest(alone_int8, approximate):.3g}"])
    n = len(next(iter(sentences.values())))
    return (f"#### Layers: int8 against float32 ({n:,} sentences per biLM in one `embed`)\n\n" + table(rows, [
        "biLM", "layer", "max abs difference", "mean abs difference", "layer's max magnitude",
        f"float32: alone vs batched (first {alone})", f"int8: alone vs batched (first {alone})"]))


# -- UPOS probe ----------------------------------------------------------------------------
def probe(model: BiLM, limit: int) -> Tuple[str, Dict[str, Dict[str, float]]]:
    """The linear UPOS probe per layer, float32 then int8 (EWT train -> test)."""
    train = read_upos(EWT / "en_ewt-ud-train.conllu.gz", limit)
    test = read_upos(EWT / "en_ewt-ud-test.conllu.gz", max(1, limit // 4) if limit else 0)
    results: Dict[str, Dict[str, float]] = {}
    for backend in (FLOAT, INT8):
        model.backend = backend
        results[backend] = linear_probe(model, train, test)
    model.backend = FLOAT
    keys = list(results[FLOAT])
    rows = [[label, *[f"{100 * results[b][k]:.2f}" for k in keys]] for label, b in (("float32", FLOAT), ("int8", INT8))]
    rows.append(["int8 - float32 (points)", *[f"{100 * (results[INT8][k] - results[FLOAT][k]):+.2f}" for k in keys]])
    n_train, n_test = sum(map(len, train[0])), sum(map(len, test[0]))
    return (f"#### Linear UPOS probe, embedded biLM (EWT train {n_train:,} tokens -> test {n_test:,} tokens)\n\n"
            + table(rows, ["backend", *[f"layer {k}" if k != "mix" else "mix" for k in keys]])), results


# -- a tagger through the listener ---------------------------------------------------------
def convert(workdir: Path) -> Tuple[Path, Path]:
    """EWT train and dev as DocBins (10 sentences a doc) under `workdir`."""
    paths = []
    for split in ("train", "dev"):
        out = workdir / f"ewt-{split}.spacy"
        subprocess.run([sys.executable, "-m", "spacy_elmo", "corpus", "ud", str(EWT / f"en_ewt-ud-{split}.conllu.gz"),
                        str(out), "--n-sents", "10"], check=True, capture_output=True)
        paths.append(out)
    return paths[0], paths[1]


def train_tagger(backend: str, train: Path, dev: Path, steps: int) -> Tuple[float, float, str]:
    """Dev tag accuracy, wall seconds and the engine that ran, of one training with the biLM on `backend`."""
    from spacy.training import Corpus
    from spacy.training.initialize import init_nlp
    from spacy.training.loop import train as train_loop
    from thinc.api import Config

    overrides = {"paths.train": str(train), "paths.dev": str(dev), "components.elmo.model.backend": backend,
                 "training.max_steps": steps, "training.eval_frequency": steps}
    config = Config().from_str(TAGGER_CONFIG, overrides=overrides)
    started = time.perf_counter()
    nlp = init_nlp(config)
    nlp, _ = train_loop(nlp, None, stdout=io.StringIO(), stderr=io.StringIO())
    seconds = time.perf_counter() - started
    engine = type(nlp.get_pipe("elmo").bilm.engine).__name__  # type: ignore[attr-defined]
    scores = nlp.evaluate(list(Corpus(str(dev))(nlp)))
    return float(scores["tag_acc"]), seconds, engine


def tagger(steps: int) -> str:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        train, dev = convert(Path(tmp))
        for label, backend in (("float32 (auto)", FLOAT), ("int8", INT8)):
            accuracy, seconds, engine = train_tagger(backend, train, dev, steps)
            rows.append([label, engine, f"{100 * accuracy:.2f}", f"{seconds:.0f}"])
    return (f"#### Tagger through the listener ({steps} steps, seed 0, EWT train -> dev)\n\n"
            + table(rows, ["biLM backend", "engine", "dev tag accuracy (XPOS)", "training + init seconds"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sections", default=",".join(SECTIONS))
    parser.add_argument("--rounds", type=POSITIVE, default=3, help="speed: alternating rounds per backend")
    parser.add_argument("--small-sentences", type=COUNT, default=1000,
                        help="EWT sentences for the small shapes (0: all)")
    parser.add_argument("--embedded-sentences", type=COUNT, default=3000,
                        help="EWT sentences for the embedded biLM (0: all)")
    parser.add_argument("--probe-limit", type=COUNT, default=0, help="probe: train sentences (0: all; test: a quarter)")
    parser.add_argument("--tagger-steps", type=POSITIVE, default=400)
    args = parser.parse_args()
    sections = args.sections.split(",")
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {unknown}; choose from {SECTIONS}")
    reason = backends.unavailable_reason(INT8)
    if reason:
        raise SystemExit(f"backend int8 cannot run here: {reason}")
    torch.set_num_threads(1)
    print(f"Machine: {machine()}\n{command_line()}\n"
          f"float32 = auto = {backends.resolve(FLOAT)}; quantized engine {torch.backends.quantized.engine}\n")
    models = {"small shapes (random)": random_model("small"), "embedded": embedded_bilm()}
    sentences = {"small shapes (random)": ewt_sentences(args.small_sentences),
                 "embedded": ewt_sentences(args.embedded_sentences)}
    ratio = probe_results = None
    if "speed" in sections:
        report, ratios = speed(models, sentences, args.rounds)
        ratio = ratios["embedded"]
        print(report + "\n", flush=True)
    if "checks" in sections:
        print(check_share(models, sentences) + "\n", flush=True)
    if "diff" in sections:
        short = {name: s[:1000] for name, s in sentences.items()}
        print(differences(models, short) + "\n", flush=True)
    if "probe" in sections:
        report, probe_results = probe(models["embedded"], args.probe_limit)
        print(report + "\n", flush=True)
    if "tagger" in sections:
        print(tagger(args.tagger_steps) + "\n", flush=True)
    if ratio is not None and probe_results is not None:
        moves = {k: 100 * abs(probe_results[INT8][k] - probe_results[FLOAT][k]) for k in probe_results[FLOAT]}
        keep = ratio >= 1.3 and max(moves.values()) <= 0.2
        print(f"Decision rule: embedded speed-up {ratio:.2f}x (>= 1.3x: {ratio >= 1.3}); largest probe move "
              f"{max(moves.values()):.2f} points (<= 0.2: {max(moves.values()) <= 0.2}) -> "
              + ("keep int8 as an opt-in backend" if keep else "keep int8 out of the package"))


if __name__ == "__main__":
    main()
