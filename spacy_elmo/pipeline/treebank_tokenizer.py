"""A tokenizer that learns a treebank's conventions from the training corpus.

spaCy's English tokenizer has its own conventions; UD English-EWT has others.
EWT keeps "e-mail", phone numbers and runs like "!!" whole and splits "and/or";
spaCy does the opposite. On such tokens spaCy's scorer does not measure the
tagger: it misses a gold token that the tokenizer merges with a neighbour,
and counts one it splits as right when any of its pieces has the gold tag.

`TreebankTokenizer` starts from the language's own tokenizer and, at
`nlp.initialize`, reads the training corpus's gold tokens and adds three
kinds of rules (nothing is written by hand):

- **special cases**: every string of up to `max_span` gold tokens with no
  whitespace between them, seen at least `min_count` times, whose majority
  analysis (a share of at least `min_share`) the tokenizer does not produce;
- **numbers with separators** (phone numbers, dates, times): letter-free word
  shapes (spaCy's `shape_`, runs capped at four) that the treebank keeps whole
  at least `min_shape_count` times and in a share of at least
  `min_shape_share` of their occurrences become one `token_match` pattern;
- **runs of punctuation** ("!!", "?!", ">>"): letter- and digit-free shapes kept
  whole likewise become prefixes and suffixes, so they come off a word whole.

Every rule is a special case or a compiled pattern, so the learned tokenizer
saves and loads with the pipeline like any spaCy tokenizer. `initialize`
starts again from the language's defaults each time, so what it learns from
a corpus does not depend on what an earlier `initialize` learned.
"""
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from spacy.language import Language
from spacy.tokenizer import Tokenizer
from spacy.tokens import Doc
from spacy.training import Alignment, Example
from spacy.util import compile_infix_regex, compile_prefix_regex, compile_suffix_regex, get_lang_class, registry

SHAPE_RUN_CAP = 4  # spaCy's shape_ caps runs of one character class at four
NUMBER_SEPARATORS = "-/:.,"


@dataclass
class TreebankRules:
    """What `learn_treebank_rules` found: special cases and whole-token shapes."""

    special_cases: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    number_shapes: List[str] = field(default_factory=list)
    punctuation_shapes: List[str] = field(default_factory=list)


def word_shape(text: str) -> str:
    """spaCy's `shape_`: digits to d, letters to x or X, runs capped at four."""
    classes = ["d" if ch.isdigit() else "X" if ch.isupper() else "x" if ch.isalpha() else ch for ch in text]
    shape: List[str] = []
    for cls in classes:
        if len(shape) >= SHAPE_RUN_CAP and all(c == cls for c in shape[-SHAPE_RUN_CAP:]):
            continue
        shape.append(cls)
    return "".join(shape)


def shape_pattern(shape: str) -> str:
    """A regular expression for the strings of a shape (a capped run means that many or more)."""
    pieces = []
    for match in re.finditer(r"(.)\1*", shape):
        char, run = match.group(1), len(match.group(0))
        cls = {"d": r"\d", "x": "[a-z]", "X": "[A-Z]"}.get(char, re.escape(char))
        if run >= SHAPE_RUN_CAP:
            pieces.append(f"{cls}{{{SHAPE_RUN_CAP},}}")
        else:
            pieces.append(cls if run == 1 else f"{cls}{{{run}}}")
    return "".join(pieces)


def no_space_spans(doc: Doc, max_span: int) -> Iterable[Tuple[str, Tuple[str, ...]]]:
    """Every run of 1 to `max_span` tokens with no whitespace between them: (its text, its tokens)."""
    for start in range(len(doc)):
        pieces: List[str] = []
        for i in range(start, min(len(doc), start + max_span)):
            pieces.append(doc[i].text)
            yield "".join(pieces), tuple(pieces)
            if doc[i].whitespace_:
                break


def learn_treebank_rules(
    gold_docs: Iterable[Doc],
    tokenize: Callable[[str], Doc],
    *,
    min_count: int = 2,
    min_share: float = 0.5,
    max_span: int = 6,
    min_shape_count: int = 3,
    min_shape_share: float = 0.75,
) -> TreebankRules:
    """Learn the rules that bring `tokenize` closer to the gold docs' tokens (see the module's docstring)."""
    analyses: Dict[str, Counter] = defaultdict(Counter)
    shapes: Dict[str, Counter] = defaultdict(Counter)
    for doc in gold_docs:
        for text, pieces in no_space_spans(doc, max_span):
            analyses[text][pieces] += 1
            shapes[word_shape(text)]["whole" if len(pieces) == 1 else "split"] += 1
    rules = TreebankRules()
    for text, counts in analyses.items():
        total = sum(counts.values())
        pieces, count = counts.most_common(1)[0]
        if total < min_count or count / total < min_share or any(ch.isspace() for ch in text):
            continue
        if tuple(t.text for t in tokenize(text)) != pieces:
            rules.special_cases[text] = pieces
    for shape, counts in sorted(shapes.items()):
        whole, total = counts["whole"], counts["whole"] + counts["split"]
        if len(shape) < 2 or whole < min_shape_count or whole / total < min_shape_share:
            continue
        if any(c in "xX" for c in shape):
            continue
        if "d" in shape:
            if any(sep in shape for sep in NUMBER_SEPARATORS):
                rules.number_shapes.append(shape)
        else:
            rules.punctuation_shapes.append(shape)
    return rules


def gold_tokens_found(tokenize: Callable[[str], Doc], gold_docs: Iterable[Doc]) -> float:
    """The share of gold tokens that `tokenize`, run on each doc's text, produces exactly (one token, same span)."""
    found = total = 0
    for gold in gold_docs:
        predicted = tokenize(gold.text)
        alignment = Alignment.from_strings([t.text for t in predicted], [t.text for t in gold])
        for i in range(len(gold)):
            aligned = [int(j) for j in alignment.y2x[i]]
            total += 1
            found += len(aligned) == 1 and len(alignment.x2y[aligned[0]]) == 1
    return found / total if total else 0.0


def _pattern_of(search: Optional[Callable]) -> Optional[str]:
    """The pattern behind a compiled regex's bound method (how spaCy serializes them)."""
    return getattr(getattr(search, "__self__", None), "pattern", None)


_LEADING_FLAGS = re.compile(r"(?:\(\?[aiLmsux]+\))+")


def _either(learned: str, own: Optional[str]) -> str:
    """`learned|own` as one pattern (`learned` alone where the language has none).

    A language's pattern may start with global inline flags (French's TOKEN_MATCH: "(?iu)..."),
    which Python refuses anywhere but at the start of the whole expression; they are scoped to the
    language's part ("(?iu:...)"), where they belong: the learned shapes are not case-insensitive.
    """
    if own is None:
        return learned
    flags = _LEADING_FLAGS.match(own)
    if flags:
        letters = "".join(dict.fromkeys(re.sub(r"[()?]", "", flags.group(0))))
        own = f"(?{letters}:{own[flags.end():]})"
    return f"{learned}|{own}"


def apply_treebank_rules(tokenizer: Tokenizer, rules: TreebankRules) -> None:
    """Add the rules to a spaCy tokenizer, in place, keeping its own rules behind them.

    The patterns go first and the special cases after, all at once: the order
    in which `from_bytes` restores them, so that a learned tokenizer is the
    same as its saved copy. Added one at a time before the patterns, the same
    rules gave the same tokens three to four times more slowly
    (benchmarks/bench_tokenizer.py measures the speed).
    """
    if rules.number_shapes:
        learned = "|".join(shape_pattern(s) for s in rules.number_shapes)
        pattern = f"(?:{learned})$"
        own = _pattern_of(tokenizer.token_match)
        tokenizer.token_match = re.compile(_either(pattern, own)).match
    if rules.punctuation_shapes:
        longest_first = sorted(rules.punctuation_shapes, key=len, reverse=True)
        runs = [shape_pattern(s) for s in longest_first]
        own_suffix = _pattern_of(tokenizer.suffix_search)
        own_prefix = _pattern_of(tokenizer.prefix_search)
        suffixes = "|".join(f"{run}$" for run in runs)
        prefixes = "|".join(f"^{run}" for run in runs)
        tokenizer.suffix_search = re.compile(_either(suffixes, own_suffix)).search
        tokenizer.prefix_search = re.compile(_either(prefixes, own_prefix)).search
    if rules.special_cases:
        learned_cases = {text: [{"ORTH": piece} for piece in pieces] for text, pieces in rules.special_cases.items()}
        tokenizer.rules = {**(tokenizer.rules or {}), **learned_cases}


def default_settings(defaults: Any) -> Dict[str, Any]:
    """The rules and patterns of a language's default tokenizer (`nlp.Defaults`), by Tokenizer's
    argument names: what TreebankTokenizer starts from, when built and at each `initialize`."""
    return {
        "rules": defaults.tokenizer_exceptions,
        "prefix_search": compile_prefix_regex(defaults.prefixes).search if defaults.prefixes else None,
        "suffix_search": compile_suffix_regex(defaults.suffixes).search if defaults.suffixes else None,
        "infix_finditer": compile_infix_regex(defaults.infixes).finditer if defaults.infixes else None,
        "token_match": defaults.token_match,
        "url_match": defaults.url_match,
    }


class TreebankTokenizer(Tokenizer):
    """The language's tokenizer, plus the rules its `initialize` learns from the training corpus."""

    def reset(self, defaults: Any) -> None:
        """Back to the language's default tokenizer (`nlp.Defaults`), without the rules learned before.

        The learned special cases are dropped first (setting a pattern reloads every special case),
        then the patterns and the language's special cases are set, in the order `from_bytes` restores
        them."""
        settings = default_settings(defaults)
        self.rules = {}
        for name in ("prefix_search", "suffix_search", "infix_finditer", "token_match", "url_match"):
            setattr(self, name, settings[name])
        self.rules = dict(settings["rules"] or {})

    def initialize(
        self,
        get_examples: Callable[[], Iterable[Example]],
        *,
        nlp: Optional[Language] = None,
        min_count: int = 2,
        min_share: float = 0.5,
        max_span: int = 6,
        min_shape_count: int = 3,
        min_shape_share: float = 0.75,
    ) -> None:
        """Learn the treebank's conventions from the examples' gold docs, starting again from the
        language's defaults (`nlp.Defaults`, else those of the vocab's language): initializing twice,
        or on another corpus first, gives the tokenizer that initializing once on this corpus gives.

        `[initialize.tokenizer]` sets the thresholds (see the module's docstring).
        """
        if not 0.0 < min_share <= 1.0 or not 0.0 < min_shape_share <= 1.0:
            raise ValueError(f"min_share and min_shape_share must be in (0, 1], got {min_share} and {min_shape_share}")
        if min_count < 1 or min_shape_count < 1 or max_span < 1:
            raise ValueError("min_count, min_shape_count and max_span must be at least 1, "
                             f"got {min_count}, {min_shape_count} and {max_span}")
        self.reset(nlp.Defaults if nlp is not None else get_lang_class(self.vocab.lang).Defaults)
        rules = learn_treebank_rules(
            (eg.reference for eg in get_examples()), self, min_count=min_count, min_share=min_share,
            max_span=max_span, min_shape_count=min_shape_count, min_shape_share=min_shape_share,
        )
        apply_treebank_rules(self, rules)


@registry.tokenizers("spacy-elmo.TreebankTokenizer.v1")
def TreebankTokenizerFactory() -> Callable[[Language], TreebankTokenizer]:
    """`@tokenizers = "spacy-elmo.TreebankTokenizer.v1"`: the language's default tokenizer that learns at initialize."""

    def make_tokenizer(nlp: Language) -> TreebankTokenizer:
        return TreebankTokenizer(nlp.vocab, **default_settings(nlp.Defaults))

    return make_tokenizer
