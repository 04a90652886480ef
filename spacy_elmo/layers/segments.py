"""Which tokens of a Doc the biLM reads together.

The biLM reads a doc in segments, each from zero state: the doc's sentences
when it has sentence boundaries (and segmentation allows it), else windows of
at most `max_window` tokens that end at sentence-final punctuation where one
is near the limit. Sentences longer than `max_window` are windowed the same
way. Whitespace tokens are left out of the biLM's input by default (the biLM
never saw them in pretraining); they get zero vectors. Every other token is in
exactly one segment, so every token gets vectors and nothing is truncated.
"""
from typing import Iterable, List, Sequence, Tuple

SEGMENTATIONS = ("auto", "sents", "windows")
_SENTENCE_FINAL = {".", "!", "?", "...", "…", "?!", "!?"}


def doc_segments(doc, max_window: int, segmentation: str = "auto", skip_whitespace: bool = True) -> List[List[int]]:
    """Token indices of each segment of `doc`, in order."""
    if segmentation not in SEGMENTATIONS:
        raise ValueError(f"segmentation must be one of {SEGMENTATIONS}, got {segmentation!r}")
    if max_window < 1:
        raise ValueError(f"max_window must be >= 1, got {max_window}")
    use_sents = segmentation == "sents" or (segmentation == "auto" and _has_sentences(doc))
    if use_sents:
        spans: Iterable[Tuple[int, int]] = ((s.start, s.end) for s in doc.sents)
    else:
        spans = [(0, len(doc))]
    segments: List[List[int]] = []
    for start, end in spans:
        indices = [i for i in range(start, end) if not (skip_whitespace and doc[i].is_space)]
        if indices:
            segments.extend(split_window(indices, [doc[i].text for i in indices], max_window))
    return segments


def _has_sentences(doc) -> bool:
    return doc.has_annotation("SENT_START") or doc.has_annotation("DEP")


def split_window(indices: List[int], texts: Sequence[str], max_window: int) -> List[List[int]]:
    """Cut a run of tokens into windows of at most max_window.

    A window ends after the last sentence-final token in its second half when
    there is one, so that cuts fall between sentences where possible.
    """
    out: List[List[int]] = []
    start = 0
    n = len(indices)
    while start < n:
        end = min(n, start + max_window)
        if end < n:
            for cut in range(end, start + max_window // 2, -1):
                if texts[cut - 1] in _SENTENCE_FINAL:
                    end = cut
                    break
        out.append(indices[start:end])
        start = end
    return out


def segments_key(doc, segments: List[List[int]]) -> tuple:
    """A key identifying the biLM's input for a doc: its words and their grouping."""
    return tuple(tuple(doc[i].text for i in seg) for seg in segments)


__all__ = ["doc_segments", "split_window", "segments_key", "SEGMENTATIONS"]
