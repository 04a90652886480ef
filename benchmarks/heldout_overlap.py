"""How held out is the held-out pretraining text, and what does its perplexity count?

    python benchmarks/heldout_overlap.py [--train TRAIN] [--heldout HELDOUT] [--config CFG] [--n 10]

Two tables:

* overlap: held-out lines that equal a training line, and that share an
  n-word sequence with the training text (after lower-casing and dropping
  everything but letters, digits and spaces, so that punctuation and case do
  not hide a copy), and the share of held-out tokens such sequences cover. The
  corpus removed exact duplicates only; near-copies (licence boilerplate, two
  translations of one text) make an absolute perplexity somewhat optimistic,
  while models trained on the same split are compared alike.
* targets: what `perplexity` predicts on the held-out text, tokenized and cut
  into segments as pretraining does (`--config`'s `[corpus]`): its tokens, the
  segment ends (each direction predicts `</S>` or `<S>` once a segment), and
  the targets outside the vocabulary that `--config`'s `[vocab]` builds from
  the training text, which the softmax predicts as its `<UNK>` class (as the
  1B Word Benchmark and bilm-tf count them).
"""
import argparse
import gzip
import re
import sys
import tempfile
from pathlib import Path
from typing import Iterator, List, Set, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import DATA, check_data, command_line, machine, table  # noqa: E402

PRETRAIN = DATA / "pretrain_en"


def normalized_words(line: str) -> List[str]:
    return re.sub(r"[^a-z0-9 ]", " ", line.lower()).split()


def ngrams(words: List[str], n: int) -> Iterator[Tuple[str, ...]]:
    return (tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def overlap(train: Path, heldout: Path, n: int) -> dict:
    """Held-out lines equal to a training line or sharing an n-gram with it; held-out tokens covered."""
    held = [normalized_words(line) for line in gzip.open(heldout, "rt", encoding="utf-8")]
    held = [words for words in held if words]
    wanted: Set[Tuple[str, ...]] = {gram for words in held for gram in ngrams(words, n)}
    lines = {" ".join(words) for words in held}
    seen: Set[Tuple[str, ...]] = set()
    equal: Set[str] = set()
    with gzip.open(train, "rt", encoding="utf-8") as handle:
        for line in handle:
            words = normalized_words(line)
            joined = " ".join(words)
            if joined in lines:
                equal.add(joined)
            seen.update(gram for gram in ngrams(words, n) if gram in wanted)
    sharing = covered = tokens = 0
    for words in held:
        cover = [False] * len(words)
        for i, gram in enumerate(ngrams(words, n)):
            if gram in seen:
                cover[i : i + n] = [True] * n
        sharing += any(cover)
        covered += sum(cover)
        tokens += len(words)
    equal_lines = sum(" ".join(words) in equal for words in held)
    return {"lines": len(held), "equal": equal_lines, "sharing": sharing, "tokens": tokens, "covered": covered}


def targets(train: Path, heldout: Path, config_path: Path, cache: Path) -> dict:
    """The held-out targets `perplexity` scores: tokens, segment ends, and those outside the vocabulary."""
    from spacy_elmo.bilm.vocab import Vocabulary
    from spacy_elmo.pretrain import load_config
    from spacy_elmo.pretrain.text_corpus import TokenizedCorpus

    config = load_config(config_path)
    corpus, vocab_settings = config["corpus"], config["vocab"]
    train_corpus = TokenizedCorpus.prepare(train, cache, corpus["lang"], corpus["max_length"])
    vocab = Vocabulary.from_counts(train_corpus.counts(), vocab_settings["max_size"], vocab_settings["min_count"])
    held = TokenizedCorpus.prepare(heldout, cache, corpus["lang"], corpus["max_length"], progress=False)
    tokens = unknown = segments = 0
    for segment in held.segments():
        segments += 1
        tokens += len(segment)
        unknown += sum(word not in vocab for word in segment)
    return {"vocab": len(vocab), "tokens": tokens, "segments": segments, "unknown": unknown}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", type=Path, default=PRETRAIN / "train.txt.gz")
    parser.add_argument("--heldout", type=Path, default=PRETRAIN / "heldout.txt.gz")
    parser.add_argument("--config", type=Path, default=HERE.parent / "configs" / "pretrain_en_2x512_128.cfg")
    parser.add_argument("--n", type=int, default=10, help="words in a shared sequence")
    parser.add_argument("--cache", type=Path, default=None, help="tokenized-corpus cache (default: a temporary one)")
    args = parser.parse_args()
    check_data(args.train), check_data(args.heldout)
    print(f"Machine: {machine()}\n{command_line()}\n")
    found = overlap(args.train, args.heldout, args.n)
    print(table([[f"{found['lines']:,}", f"{found['equal']:,} ({found['equal'] / found['lines']:.1%})",
                  f"{found['sharing']:,} ({found['sharing'] / found['lines']:.1%})",
                  f"{found['covered'] / found['tokens']:.1%}"]],
                ["held-out lines", "equal to a training line", f"sharing {args.n} words in a row",
                 "held-out words inside such a sequence"]))
    with tempfile.TemporaryDirectory() as tmp:
        counted = targets(args.train, args.heldout, args.config, args.cache or Path(tmp))
    predicted = counted["tokens"] + counted["segments"]  # each direction: the tokens and one segment end
    print("\n" + table([[f"{counted['vocab']:,}", f"{predicted:,}", f"{counted['segments']:,}",
                         f"{counted['unknown']:,} ({counted['unknown'] / predicted:.1%})"]],
                       ["vocabulary", "targets a direction predicts", "of them segment ends",
                        "of them outside the vocabulary (<UNK>)"]))


if __name__ == "__main__":
    main()
