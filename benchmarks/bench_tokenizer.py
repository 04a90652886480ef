"""spacy-elmo.TreebankTokenizer.v1 next to spaCy's English tokenizer: gold tokens found, and speed.

    python benchmarks/bench_tokenizer.py [--rounds 5]

The learned tokenizer reads EWT train's gold tokens (as `[initialize.tokenizer]`
does in training); both tokenizers then run on EWT dev's and test's raw text.
"Gold tokens found" is the share of gold tokens a tokenizer produces exactly.
Speed is tokens/s over EWT train's text, the two tokenizers alternating
(--rounds), so that each ratio compares runs seconds apart.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List

import spacy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import COUNT, DATA, POSITIVE, check_data, command_line, machine, table  # noqa: E402

from spacy.training import Example  # noqa: E402

from spacy_elmo.gold_data import ud_docs  # noqa: E402
from spacy_elmo.pipeline.treebank_tokenizer import gold_tokens_found  # noqa: E402

TOKENIZER = {"nlp": {"tokenizer": {"@tokenizers": "spacy-elmo.TreebankTokenizer.v1"}}}


def tokens_per_second(tokenizer, texts: List[str]) -> float:
    start = time.perf_counter()
    n = sum(len(tokenizer(text)) for text in texts)
    return n / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=POSITIVE, default=5, help="alternating runs of each tokenizer")
    parser.add_argument("--limit", type=COUNT, default=0, help="read only this many sentences of each file (0: all)")
    args = parser.parse_args()
    paths = [check_data(DATA / "ud_en_ewt" / f"en_ewt-ud-{split}.conllu.gz") for split in ("train", "dev", "test")]
    print(f"Machine: {machine()}\n{command_line()}\n")
    train, dev, test = (ud_docs(path, n_sents=10, limit=args.limit) for path in paths)
    learned = spacy.blank("en", config=TOKENIZER)
    start = time.perf_counter()
    learned.initialize(lambda: [Example(learned.make_doc(doc.text), doc) for doc in train])
    learn_seconds = time.perf_counter() - start
    tokenizers = {"spaCy's English tokenizer": spacy.blank("en").tokenizer,
                  "learned from EWT train": learned.tokenizer}
    texts = [doc.text for doc in train]
    for tokenizer in tokenizers.values():
        tokens_per_second(tokenizer, texts[:50])  # warm-up
    speeds: Dict[str, List[float]] = {name: [] for name in tokenizers}
    for _ in range(args.rounds):
        for name, tokenizer in tokenizers.items():
            speeds[name].append(tokens_per_second(tokenizer, texts))
    base = next(iter(speeds))
    rows = []
    for name, tokenizer in tokenizers.items():
        ratios = [v / b for v, b in zip(speeds[name], speeds[base])]
        rows.append([name, f"{gold_tokens_found(tokenizer, dev):.2%}", f"{gold_tokens_found(tokenizer, test):.2%}",
                     f"{statistics.median(speeds[name]):,.0f}", f"{statistics.median(ratios):.2f}"])
    print(f"### {len(train)} EWT train docs learned from in {learn_seconds:.1f} s; "
          f"speed over their text, {args.rounds} alternating rounds\n")
    print(table(rows, ["tokenizer", "gold tokens found, dev", "gold tokens found, test", "median tokens/s",
                       "median ratio"]))


if __name__ == "__main__":
    main()
