"""nlp.pipe speed: elmo + tagger + parser next to the same pipeline on spaCy's CNN tok2vec.

    python benchmarks/bench_pipeline.py [--weights DIR] [--docs 200]

Both pipelines come from the project configs (configs/ewt_elmo.cfg and
configs/ewt_baseline.cfg, morphologizer left out), initialized on EWT train
docs; their speed does not depend on training. Timed on the EWT dev docs
(10 sentences each), one process, after a warm-up pass.
"""
import argparse
import sys
import time
from pathlib import Path

import spacy
from thinc.api import Config

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA, ROOT, machine, table  # noqa: E402

from spacy_elmo.corpora import ud_docs  # noqa: E402


def build(config_path: Path, weights, train_docs):
    from spacy.training import Example

    config = Config().from_disk(config_path)
    pipeline = [p for p in config["nlp"]["pipeline"] if p != "morphologizer"]
    config["nlp"]["pipeline"] = pipeline
    del config["components"]["morphologizer"]
    config["training"]["score_weights"] = {}
    if weights and "paths" in config and "elmo_weights" in config["paths"]:
        config["paths"]["elmo_weights"] = str(weights)
    nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=False)
    examples = [Example(nlp.make_doc(d.text), d) for d in train_docs]
    nlp.initialize(lambda: examples)
    return nlp


def words_per_second(nlp, texts, repeats: int = 2) -> float:
    list(nlp.pipe(texts[:20]))
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        n = sum(len(doc) for doc in nlp.pipe(texts, batch_size=64))
        best = max(best, n / (time.perf_counter() - start))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--weights", default=None)
    parser.add_argument("--docs", type=int, default=200)
    args = parser.parse_args()
    print(f"Machine: {machine()}\nCommand: python {' '.join(sys.argv)}\n")
    train = ud_docs(DATA / "ud_en_ewt" / "en_ewt-ud-train.conllu.gz", n_sents=10, limit=500)
    texts = [d.text for d in ud_docs(DATA / "ud_en_ewt" / "en_ewt-ud-dev.conllu.gz", n_sents=10)][: args.docs]
    rows = []
    speeds = {}
    for name, path in (("tok2vec + tagger + parser (spaCy CNN)", ROOT / "configs" / "ewt_baseline.cfg"),
                       ("elmo + tagger + parser", ROOT / "configs" / "ewt_elmo.cfg")):
        nlp = build(path, args.weights, train)
        speeds[name] = words_per_second(nlp, texts)
        rows.append([name, f"{speeds[name]:,.0f}"])
    base = rows[0][0]
    for row in rows:
        row.append(f"{speeds[row[0]] / speeds[base]:.2f}")
    n_words = sum(len(t.split()) for t in texts)
    print(f"### nlp.pipe on {len(texts)} EWT dev docs (~{n_words:,} words), batch_size 64, one process\n")
    print(table(rows, ["pipeline", "words/s", "vs CNN"]))


if __name__ == "__main__":
    main()
