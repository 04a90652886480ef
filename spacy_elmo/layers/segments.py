"""Which tokens of a Doc the biLM reads together.

The biLM reads a doc in segments, each from zero state, as it was pretrained
on sentences:

* a doc with sentence boundaries (and segmentation allowing it) is read
  sentence by sentence; a sentence is read whole up to `max_length` tokens;
* a doc without boundaries is cut after sentence-final punctuation into
  sentences, which are packed into windows of at most `max_window` tokens;
  a sentence longer than `max_window` gets a window of its own, read whole
  up to `max_length` tokens.

Only a sentence longer than `max_length` is cut. With `stride` below
`max_length` it is read in overlapping windows of `max_length` tokens that
start every `stride` tokens (the last one ends at the sentence's end), and
each token takes its vectors from the window where it is most central, so no
token sits at a cut with no context on one side (spacy-transformers' strided
spans do the same). `stride == max_length` cuts it into consecutive pieces
without overlap. Whitespace tokens are left out of the biLM's input by
default (the biLM never saw them in pretraining); they get zero vectors.
Every other token takes its vectors from exactly one segment, so every
token gets vectors and nothing is truncated.
"""
from typing import TYPE_CHECKING, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

from ..defaults import MAX_LENGTH, MAX_WINDOW, SEGMENTATION, SKIP_WHITESPACE
from ..defaults import STRIDE as DEFAULT_STRIDE

if TYPE_CHECKING:
    from spacy.tokens import Doc

SEGMENTATIONS = ("auto", "sents", "windows")
# a token made of these characters alone ends a sentence: ".", "...", "?!", "!!", and the full stops
# and question marks of the scripts the published multilingual models cover (CJK, Arabic, Devanagari)
_SENTENCE_FINAL = frozenset(".!?…。！？｡؟।॥")


class Segment(NamedTuple):
    """Tokens the biLM reads from one zero state, and those that take their vectors from it.

    indices: the doc's token indices, in order, that the biLM reads together.
    keep: (start, end) positions within `indices` whose vectors this segment
        gives; the whole segment unless it is one of overlapping windows.
    """

    indices: List[int]
    keep: Tuple[int, int]

    @property
    def kept(self) -> List[int]:
        """The doc's token indices that take their vectors from this segment."""
        return self.indices[self.keep[0] : self.keep[1]]


def doc_segments(
    doc: "Doc",
    max_window: int = MAX_WINDOW,
    segmentation: str = SEGMENTATION,
    skip_whitespace: bool = SKIP_WHITESPACE,
    max_length: int = MAX_LENGTH,
    stride: Optional[int] = None,
) -> List[Segment]:
    """The segments of `doc`, in order; see the module docstring.

    stride: for a sentence longer than `max_length`, the step between the
        starts of its overlapping windows, in [1, max_length]; None: no
        overlap (stride = max_length).
    """
    if segmentation not in SEGMENTATIONS:
        raise ValueError(f"segmentation must be one of {SEGMENTATIONS}, got {segmentation!r}")
    if max_window < 1 or max_length < 1:
        raise ValueError(f"max_window and max_length must be >= 1, got {max_window} and {max_length}")
    check_stride(stride, max_length)
    use_sents = segmentation == "sents" or (segmentation == "auto" and _has_sentences(doc))
    if use_sents:
        spans: Iterable[Tuple[int, int]] = ((s.start, s.end) for s in doc.sents)
        window = max_length  # a sentence is one segment, cut only past max_length
    else:
        spans = [(0, len(doc))]
        window = max_window
    segments: List[Segment] = []
    for start, end in spans:
        indices = [i for i in range(start, end) if not (skip_whitespace and doc[i].is_space)]
        if indices:
            segments.extend(split_window(indices, [doc[i].text for i in indices], window, max_length, stride))
    return segments


def check_stride(stride: Optional[int], max_length: int) -> None:
    """A stride must be a whole number of tokens in [1, max_length] (None: no overlap)."""
    if stride is not None and not (isinstance(stride, int) and 1 <= stride <= max_length):
        hint = ""
        if isinstance(stride, int) and stride > max_length >= 1:  # e.g. max_length lowered, stride left at 192
            hint = f"; lower stride with max_length (e.g. stride = {max(1, max_length * 3 // 4)}, three quarters of it)"
        raise ValueError(
            f"stride must be between 1 and max_length ({max_length}), got {stride!r}{hint}; "
            "stride = max_length reads long sentences in pieces without overlap"
        )


def _has_sentences(doc: "Doc") -> bool:
    return doc.has_annotation("SENT_START") or doc.has_annotation("DEP")


def split_window(
    indices: List[int],
    texts: Sequence[str],
    max_window: int,
    max_length: int = MAX_LENGTH,
    stride: Optional[int] = None,
) -> List[Segment]:
    """Cut a run of tokens into windows of whole sentences.

    Sentences end after sentence-final punctuation (and at the end of the
    run). Consecutive sentences share a window while it holds at most
    `max_window` tokens; a longer sentence is a window of its own, and only a
    sentence longer than `max_length` is cut (`strided_windows`). No window
    holds more than `max_length` tokens, the most the biLM reads from one
    zero state, whatever `max_window` says.
    """
    limit = max(max_length, 1)
    max_window = min(max_window, limit)
    windows: List[Segment] = []
    current: List[int] = []
    for start, end in _sentences(texts):
        if end - start > limit:
            if current:
                windows.append(_whole(current))
                current = []
            for (a, b), keep in strided_windows(end - start, limit, stride):
                windows.append(Segment(indices[start + a : start + b], keep))
            continue
        if current and len(current) + end - start > max_window:
            windows.append(_whole(current))
            current = []
        current.extend(indices[start:end])
    if current:
        windows.append(_whole(current))
    return windows


def _whole(indices: List[int]) -> Segment:
    return Segment(indices, (0, len(indices)))


def strided_windows(n: int, window: int, stride: Optional[int] = None) -> List[Tuple[Tuple[int, int], Tuple[int, int]]]:
    """Windows over n tokens: ((start, end) of each, (start, end) of the part it keeps, within it).

    stride None or >= window: consecutive pieces of `window` tokens, the last
    shorter, each keeping all of itself. stride < window: windows of `window`
    tokens every `stride` tokens, the last one moved back to end at n; each
    token is kept by the window where it is most central (farthest from that
    window's nearer edge; the earlier window on a tie), and a window that
    keeps no token is left out.
    """
    if n <= window:
        return [((0, n), (0, n))]
    step = window if stride is None else min(stride, window)
    if step >= window:
        return [((s, min(s + window, n)), (0, min(s + window, n) - s)) for s in range(0, n, window)]
    starts = list(range(0, n - window, step)) + [n - window]
    owner = []
    first = 0  # the first window that can still contain token k
    for k in range(n):
        while starts[first] + window <= k:
            first += 1
        best, best_score = first, -1
        for w in range(first, len(starts)):
            if starts[w] > k:
                break
            score = min(k - starts[w], starts[w] + window - 1 - k)
            if score > best_score:
                best, best_score = w, score
        owner.append(best)
    kept: Dict[int, List[int]] = {}  # window -> [first, last + 1] of the tokens it keeps
    for k, w in enumerate(owner):
        kept.setdefault(w, [k, k])[1] = k + 1
    return [((starts[w], starts[w] + window), (a - starts[w], b - starts[w])) for w, (a, b) in sorted(kept.items())]


def _sentences(texts: Sequence[str]) -> List[Tuple[int, int]]:
    """(start, end) of each run that ends with sentence-final punctuation (or the text)."""
    spans = []
    start = 0
    for k, text in enumerate(texts):
        if text and _SENTENCE_FINAL.issuperset(text):
            spans.append((start, k + 1))
            start = k + 1
    if start < len(texts):
        spans.append((start, len(texts)))
    return spans


def segments_key(doc: "Doc", segments: List[Segment]) -> tuple:
    """A key identifying the biLM's input for a doc: its words, their positions in the doc (a
    skipped whitespace token moves them), their grouping and what each segment keeps."""
    return tuple((tuple(seg.indices), tuple(doc[i].text for i in seg.indices), seg.keep) for seg in segments)


__all__ = [
    "DEFAULT_STRIDE",
    "SEGMENTATIONS",
    "Segment",
    "check_stride",
    "doc_segments",
    "segments_key",
    "split_window",
    "strided_windows",
]
