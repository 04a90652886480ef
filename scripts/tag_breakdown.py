"""Where a tagger's accuracy differs between pipelines: by the word's training frequency, ambiguity, gold tag.

    python scripts/tag_breakdown.py TEST.spacy --train TRAIN.spacy \
        --run baseline=training/a_s0/model-best --run baseline=training/a_s1/model-best \
        --run elmo=training/b_s0/model-best --run elmo=training/b_s1/model-best \
        [--attr pos] [--min-tokens 100] [--output metrics/upos_breakdown.md]

A total accuracy says how much one pipeline gains over another, not where.
Each pipeline tags TEST's gold tokens (so every token is scored, with no
alignment); its accuracy on ATTR (pos: UPOS, tag: XPOS) is then split by
the word's count in TRAIN (unseen, 1-9, 10-99, 100 or more), by whether
TRAIN gave the word one tag or several, by whether the first pipeline's
own tokenizer, run on the raw text, finds the gold token (where it does
not, spaCy's scorer does not measure the tagger: it misses a gold token
merged with a neighbour and counts a split one as right when any piece has
the gold tag), and by gold tag. A run named
more than once (one pipeline per seed) is averaged. The last column is the
share of the total gain of the last run over the first that each group
holds: where the contextual layers pay, and where there is no more to gain.
"""
import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

FREQUENCY_BINS = [(0, 0, "unseen in train"), (1, 9, "seen 1-9 times"), (10, 99, "seen 10-99 times"),
                  (100, None, "seen 100+ times")]


def read_docs(path: Path, vocab) -> list:
    """The gold docs of a .spacy file; one that is not a DocBin (a .conllu, say: spaCy's E1014, which
    names no file) ends the script with one line naming it and how to make one."""
    import zlib

    from spacy.tokens import DocBin

    try:
        return list(DocBin().from_disk(path).get_docs(vocab))
    except (ValueError, KeyError, TypeError, zlib.error) as err:
        raise SystemExit(f"{path}: not a spaCy DocBin (.spacy) file ({' '.join(str(err).split())}); convert it "
                         "first (python -m spacy_elmo corpus ud FILE.conllu OUT.spacy)") from None


def train_lexicon(docs: Iterable, attr: str) -> Tuple[Counter, Dict[str, set]]:
    """How often each word form occurs in the training docs, and the gold tags it had there."""
    counts: Counter = Counter()
    tags: Dict[str, set] = defaultdict(set)
    for doc in docs:
        for token in doc:
            counts[token.text] += 1
            tags[token.text].add(getattr(token, f"{attr}_"))
    return counts, tags


def tokenizer_agrees(nlp, gold_docs: Sequence) -> List[List[bool]]:
    """Per gold token: does the pipeline's own tokenizer, run on the doc's text, produce exactly this token?"""
    from spacy.training import Example

    agrees = []
    for gold in gold_docs:
        alignment = Example(nlp.make_doc(gold.text), gold).alignment
        one_to_one = [alignment.y2x.lengths[i] == 1 and alignment.x2y.lengths[alignment.y2x[i][0]] == 1
                      for i in range(len(gold))]
        agrees.append([bool(x) for x in one_to_one])
    return agrees


def token_groups(text: str, gold: str, counts: Counter, tags: Dict[str, set], agrees: bool) -> List[str]:
    """The groups a test token belongs to: all, its frequency bin, its ambiguity in train, whether the
    tokenizer finds it, its gold tag."""
    n = counts.get(text, 0)
    groups = ["all"]
    groups += [name for low, high, name in FREQUENCY_BINS if n >= low and (high is None or n <= high)]
    if n:
        groups.append("one tag in train" if len(tags[text]) == 1 else "several tags in train")
    groups.append("the tokenizer finds it" if agrees else "the tokenizer splits it otherwise")
    groups.append(f"gold {gold}")
    return groups


def tag_gold_tokens(nlp, gold_docs: Sequence, batch_size: int = 64) -> list:
    """The pipeline's docs for the gold tokens: its tokenizer is skipped, so token i is gold token i."""
    from spacy.tokens import Doc
    from spacy_elmo.progress_bars import progress_bar

    inputs = [Doc(nlp.vocab, words=[t.text for t in d], spaces=[bool(t.whitespace_) for t in d]) for d in gold_docs]
    return list(progress_bar(nlp.pipe(inputs, batch_size=batch_size), total=len(inputs), desc="tagging", leave=False))


def score_groups(gold_docs: Sequence, predicted: Sequence, attr: str, counts: Counter,
                 tags: Dict[str, set], agrees: Sequence[Sequence[bool]]) -> Tuple[Counter, Counter]:
    """Per group: tokens, and tokens whose predicted ATTR equals the gold one."""
    total: Counter = Counter()
    right: Counter = Counter()
    for gold_doc, doc, doc_agrees in zip(gold_docs, predicted, agrees):
        if len(gold_doc) != len(doc):
            raise ValueError(f"the pipeline changed the tokenization of {gold_doc.text[:60]!r}")
        for gold, token, agree in zip(gold_doc, doc, doc_agrees):
            gold_tag = getattr(gold, f"{attr}_")
            if not gold_tag:
                continue
            for group in token_groups(gold.text, gold_tag, counts, tags, agree):
                total[group] += 1
                right[group] += getattr(token, f"{attr}_") == gold_tag
    return total, right


def group_order(total: Counter, min_tokens: int) -> List[str]:
    """all, the frequency bins, the ambiguity groups, then gold tags by size (those with >= min_tokens)."""
    fixed = ["all"] + [name for _, _, name in FREQUENCY_BINS]
    fixed += ["one tag in train", "several tags in train"]
    fixed += ["the tokenizer finds it", "the tokenizer splits it otherwise"]
    gold = sorted((g for g in total if g.startswith("gold ") and total[g] >= min_tokens), key=lambda g: -total[g])
    return [g for g in fixed if total[g]] + gold


def markdown(total: Counter, accuracy: Dict[str, Dict[str, float]], min_tokens: int) -> str:
    """A table: group, tokens, share, each run's accuracy, last minus first, the share of the gain."""
    runs = list(accuracy)
    first, last = runs[0], runs[-1]
    gained = {g: (accuracy[last][g] - accuracy[first][g]) * total[g] for g in total}
    header = ["group", "tokens", "share"] + runs
    if len(runs) > 1:
        header += [f"{last} - {first}", "share of the gain"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for group in group_order(total, min_tokens):
        row = [group, f"{total[group]:,}", f"{100 * total[group] / total['all']:.1f}%"]
        row += [f"{100 * accuracy[run][group]:.2f}" for run in runs]
        if len(runs) > 1:
            row.append(f"{100 * (accuracy[last][group] - accuracy[first][group]):+.2f}")
            share = gained[group] / gained["all"] if gained["all"] else float("nan")
            row.append(f"{100 * share:.0f}%")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def parse_runs(specs: Sequence[str]) -> Dict[str, List[str]]:
    """NAME=PATH options, in order; a NAME given again adds a seed to it."""
    runs: Dict[str, List[str]] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"--run {spec!r}: expected NAME=PIPELINE_PATH")
        runs.setdefault(name, []).append(path)
    return runs


def load_pipeline(name: str, path: str):
    """spacy.load(path), or one line (not spaCy's traceback) saying why --run NAME=PATH cannot be loaded."""
    from spacy_elmo.cli._util import try_load_pipeline

    nlp, problem = try_load_pipeline(path)
    if nlp is None:
        raise SystemExit(f"--run {name}={path}: cannot load the pipeline ({problem})")
    return nlp


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("test", type=Path, help=".spacy file with gold tags to score on")
    parser.add_argument("--train", type=Path, required=True, help=".spacy file the pipelines were trained on")
    parser.add_argument("--run", action="append", required=True, metavar="NAME=PIPELINE",
                        help="a pipeline to score; repeat a NAME for its seeds (averaged); the first NAME is the "
                             "reference of the gain")
    parser.add_argument("--attr", choices=["pos", "tag"], default="pos", help="pos: UPOS (default), tag: XPOS")
    parser.add_argument("--min-tokens", type=int, default=100, help="list gold tags with at least this many tokens")
    parser.add_argument("--batch-size", type=int, default=64, help="docs per batch when tagging (%(default)s)")
    parser.add_argument("--output", type=Path, help="also write the table here")
    args = parser.parse_args(argv)
    if args.batch_size < 1:  # nlp.pipe then yields nothing, and the data was blamed
        parser.error(f"--batch-size must be 1 or more, got {args.batch_size}")
    if args.output is not None and args.output.is_dir():  # found only after every pipeline had tagged
        parser.error(f"--output {args.output}: is a directory; name the file to write the table to")

    import spacy

    runs = parse_runs(args.run)
    for path in (args.test, args.train):
        if not path.is_file():
            raise SystemExit(f"{path}: no such .spacy file")
    for name, paths in runs.items():  # before any pipeline is loaded and run: a typo fails at once
        for pipeline in paths:
            if not Path(pipeline).is_dir():
                raise SystemExit(f"--run {name}={pipeline}: no such pipeline directory")
    vocab = spacy.blank("en").vocab
    gold_docs = read_docs(args.test, vocab)
    counts, tags = train_lexicon(read_docs(args.train, vocab), args.attr)
    if not gold_docs:
        raise SystemExit(f"{args.test}: no documents")
    total: Counter = Counter()
    accuracy: Dict[str, Dict[str, float]] = {}
    agrees: List[List[bool]] = []
    for name, paths in runs.items():
        sums: Dict[str, float] = defaultdict(float)
        for path in paths:
            print(f"{name}: {path}", file=sys.stderr)
            nlp = load_pipeline(name, path)
            agrees = agrees or tokenizer_agrees(nlp, gold_docs)  # the first pipeline's tokenizer
            predicted = tag_gold_tokens(nlp, gold_docs, args.batch_size)
            if not any(getattr(token, f"{args.attr}_") for doc in predicted for token in doc):
                raise SystemExit(f"--run {name}={path}: the pipeline predicts no {args.attr} (its components: "
                                 f"{', '.join(nlp.pipe_names) or 'none'}), so there is nothing to score")
            total, right = score_groups(gold_docs, predicted, args.attr, counts, tags, agrees)
            for group in total:
                sums[group] += right[group] / total[group]
        accuracy[name] = {group: sums[group] / len(paths) for group in total}
    if not total["all"]:
        raise SystemExit(f"{args.test}: no token has a gold {args.attr}")
    table = markdown(total, accuracy, args.min_tokens)
    print(table)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(table, encoding="utf-8")


if __name__ == "__main__":
    main()
