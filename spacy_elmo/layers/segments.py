"""Which tokens of a Doc the biLM reads together.

The biLM reads a doc in segments, each from zero state, as it was pretrained
on sentences:

* a doc with sentence boundaries (and segmentation allowing it) is read
  sentence by sentence; a sentence is read whole up to `max_length` tokens;
* a doc without boundaries is cut after sentence-final punctuation into
  sentences, which are packed into windows of at most `max_window` tokens;
  a sentence longer than `max_window` gets a window of its own, read whole
  up to `max_length` tokens.

Only a sentence longer than `max_length` is cut (into pieces of at most
`max_length`). Whitespace tokens are left out of the biLM's input by default
(the biLM never saw them in pretraining); they get zero vectors. Every other
token is in exactly one segment, so every token gets vectors and nothing is
truncated.
"""
from typing import Iterable, List, Sequence, Tuple

SEGMENTATIONS = ("auto", "sents", "windows")
_SENTENCE_FINAL = {".", "!", "?", "...", "…", "?!", "!?"}


def doc_segments(
    doc,
    max_window: int = 64,
    segmentation: str = "auto",
    skip_whitespace: bool = True,
    max_length: int = 256,
) -> List[List[int]]:
    """Token indices of each segment of `doc`, in order."""
    if segmentation not in SEGMENTATIONS:
        raise ValueError(f"segmentation must be one of {SEGMENTATIONS}, got {segmentation!r}")
    if max_window < 1 or max_length < 1:
        raise ValueError(f"max_window and max_length must be >= 1, got {max_window} and {max_length}")
    use_sents = segmentation == "sents" or (segmentation == "auto" and _has_sentences(doc))
    if use_sents:
        spans: Iterable[Tuple[int, int]] = ((s.start, s.end) for s in doc.sents)
        window = max_length  # a sentence is one segment, cut only past max_length
    else:
        spans = [(0, len(doc))]
        window = max_window
    segments: List[List[int]] = []
    for start, end in spans:
        indices = [i for i in range(start, end) if not (skip_whitespace and doc[i].is_space)]
        if indices:
            segments.extend(split_window(indices, [doc[i].text for i in indices], window, max_length))
    return segments


def _has_sentences(doc) -> bool:
    return doc.has_annotation("SENT_START") or doc.has_annotation("DEP")


def split_window(indices: List[int], texts: Sequence[str], max_window: int, max_length: int = 256) -> List[List[int]]:
    """Cut a run of tokens into windows of whole sentences.

    Sentences end after sentence-final punctuation (and at the end of the
    run). Consecutive sentences share a window while it holds at most
    `max_window` tokens; a longer sentence is a window of its own, and only a
    sentence longer than `max_length` is cut, into pieces of `max_length`.
    """
    limit = max(max_length, 1)
    windows: List[List[int]] = []
    current: List[int] = []
    for start, end in _sentences(texts):
        if end - start > limit:
            if current:
                windows.append(current)
                current = []
            windows.extend(indices[s : min(s + limit, end)] for s in range(start, end, limit))
            continue
        if current and len(current) + end - start > max_window:
            windows.append(current)
            current = []
        current.extend(indices[start:end])
    if current:
        windows.append(current)
    return windows


def _sentences(texts: Sequence[str]) -> List[Tuple[int, int]]:
    """(start, end) of each run that ends with sentence-final punctuation (or the text)."""
    spans = []
    start = 0
    for k, text in enumerate(texts):
        if text in _SENTENCE_FINAL:
            spans.append((start, k + 1))
            start = k + 1
    if start < len(texts):
        spans.append((start, len(texts)))
    return spans


def segments_key(doc, segments: List[List[int]]) -> tuple:
    """A key identifying the biLM's input for a doc: its words and their grouping."""
    return tuple(tuple(doc[i].text for i in seg) for seg in segments)


__all__ = ["doc_segments", "split_window", "segments_key", "SEGMENTATIONS"]
