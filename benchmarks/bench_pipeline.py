"""nlp.pipe speed: elmo + tagger + parser next to the same pipeline on spaCy's CNN tok2vec.

    python benchmarks/bench_pipeline.py [--weights DIR] [--docs 200]

Both pipelines come from the project configs (configs/ewt_elmo.cfg and
configs/ewt_baseline.cfg, morphologizer left out), initialized on EWT train
docs; their speed does not depend on training. Timed on the EWT dev docs
(10 sentences each), one process, after a warm-up pass. The two pipelines
run alternately (--rounds), so that each ratio compares runs a few seconds
apart: this shared machine's speed drifts by tens of percent within minutes.
"""
import argparse
import statistics
import sys
import time
from typing import Dict, List
from pathlib import Path

import spacy
from thinc.api import Config

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA, POSITIVE, ROOT, check_data, check_weights, command_line, machine, table  # noqa: E402

from spacy_elmo.gold_data import ud_docs  # noqa: E402


def build(config_path: Path, weights, train_docs):
    from spacy.training import Example

    config = Config().from_disk(config_path)
    pipeline = [p for p in config["nlp"]["pipeline"] if p != "morphologizer"]
    config["nlp"]["pipeline"] = pipeline
    del config["components"]["morphologizer"]
    config["training"]["score_weights"] = {}
    if weights and "elmo" in config["components"]:
        config["initialize"]["components"]["elmo"] = {"weights": str(weights)}  # instead of the config's loader
    nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=False)
    examples = [Example(nlp.make_doc(d.text), d) for d in train_docs]
    nlp.initialize(lambda: examples)
    return nlp


def words_per_second(nlp, texts) -> float:
    start = time.perf_counter()
    n = sum(len(doc) for doc in nlp.pipe(texts, batch_size=64))
    return n / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--weights", default=None, help="the elmo component's model (default: the config's)")
    parser.add_argument("--docs", type=POSITIVE, default=200, help="EWT dev docs timed")
    parser.add_argument("--rounds", type=POSITIVE, default=5, help="alternating runs of each pipeline")
    args = parser.parse_args()
    train_path = check_data(DATA / "ud_en_ewt" / "en_ewt-ud-train.conllu.gz")
    dev_path = check_data(DATA / "ud_en_ewt" / "en_ewt-ud-dev.conllu.gz")
    check_weights(args.weights)
    print(f"Machine: {machine()}\n{command_line()}\n")
    train = ud_docs(train_path, n_sents=10, limit=500)
    texts = [d.text for d in ud_docs(dev_path, n_sents=10)][: args.docs]
    names = {"tok2vec + tagger + parser (spaCy CNN)": ROOT / "configs" / "ewt_baseline.cfg",
             "elmo + tagger + parser": ROOT / "configs" / "ewt_elmo.cfg"}
    pipelines = {name: build(path, args.weights, train) for name, path in names.items()}
    for nlp in pipelines.values():
        list(nlp.pipe(texts[:20]))  # warm-up
    speeds: Dict[str, List[float]] = {name: [] for name in pipelines}
    for _ in range(args.rounds):
        for name, nlp in pipelines.items():
            speeds[name].append(words_per_second(nlp, texts))
    base = next(iter(speeds))
    rows = []
    for name, values in speeds.items():
        ratios = [v / b for v, b in zip(values, speeds[base])]
        rows.append([name, f"{statistics.median(values):,.0f}", f"{statistics.median(ratios):.2f}",
                     ", ".join(f"{r:.2f}" for r in ratios)])
    n_words = sum(len(t.split()) for t in texts)
    print(f"### nlp.pipe on {len(texts)} EWT dev docs (~{n_words:,} words), batch_size 64, one process, "
          f"{args.rounds} alternating rounds\n")
    print(table(rows, ["pipeline", "median words/s", "median ratio to CNN", "per-round ratios"]))


if __name__ == "__main__":
    main()
