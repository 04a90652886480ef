"""Evaluation corpora to spaCy DocBin: UD CoNLL-U (tags, morphology, dependencies) and
Universal NER IOB2 (entities). Both may be gzip-compressed, with or without
the `.gz` in the name the caller gives. Sentences are grouped
`n_sents` to a doc, with gold sentence boundaries.
"""
import gzip
from pathlib import Path
from typing import Iterator, List, Optional, Tuple, Union

from spacy.tokens import Doc, DocBin
from spacy.vocab import Vocab

PathLike = Union[str, Path]


def find_input(path: PathLike) -> Path:
    """The corpus file `path` names, plain or gzipped: `x.conllu` finds `x.conllu.gz` and the reverse.

    `spacy project assets` fetches the release files (plain); the shared data
    holds them gzipped; the project's commands name them without `.gz`.
    """
    path = Path(path)
    candidates = [path, path.with_name(path.name[:-3])] if path.suffix == ".gz" else [path, Path(f"{path}.gz")]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"{path}: no such file (nor {candidates[1].name} beside it)")


def _read_text(path: PathLike) -> str:
    """The text of a corpus file, gzipped or not (found by its first bytes, not its name)."""
    path = find_input(path)
    with open(path, "rb") as handle:
        gzipped = handle.read(2) == b"\x1f\x8b"
    if gzipped:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            return handle.read()
    return path.read_text(encoding="utf-8")


def conllu_words(path: PathLike, limit: int = 0) -> List[List[str]]:
    """The word forms of each sentence of a CoNLL-U file (syntactic words; no spaCy objects)."""
    sentences: List[List[str]] = []
    words: List[str] = []
    for line in _read_text(path).splitlines() + [""]:
        if not line.strip():
            if words:
                sentences.append(words)
                words = []
                if limit and len(sentences) >= limit:
                    break
            continue
        if line.startswith("#"):
            continue
        columns = line.split("\t")
        if columns[0].isdigit():
            words.append(columns[1])
    return sentences


def ud_docs(path: PathLike, n_sents: int = 10, limit: int = 0) -> List[Doc]:
    """Docs of `n_sents` gold sentences each, from a CoNLL-U file (syntactic words as tokens)."""
    from spacy.training.converters import conllu_to_docs

    text = _read_text(path)
    if limit:
        text = "\n\n".join(text.strip().split("\n\n")[:limit]) + "\n"
    return list(conllu_to_docs(text, n_sents=n_sents, no_print=True))


def _iob2_sentences(text: str) -> Iterator[Tuple[List[str], List[str]]]:
    words: List[str] = []
    tags: List[str] = []
    for line in text.splitlines() + [""]:
        line = line.rstrip("\n")
        if not line.strip():
            if words:
                yield words, tags
            words, tags = [], []
            continue
        if line.startswith("#"):
            continue
        columns = line.split("\t")
        if len(columns) < 3 or not columns[0].isdigit():
            continue
        words.append(columns[1])
        tag = columns[2]
        tags.append(tag if tag in ("O",) or tag[:2] in ("B-", "I-") else "O")


def uner_docs(path: PathLike, n_sents: int = 10, limit: int = 0, vocab: Optional[Vocab] = None) -> List[Doc]:
    """Docs with gold entities (PER, LOC, ORG) from a Universal NER IOB2 file."""
    vocab = vocab or Vocab()
    sentences = list(_iob2_sentences(_read_text(path)))
    if limit:
        sentences = sentences[:limit]
    docs = []
    for start in range(0, len(sentences), n_sents):
        group = sentences[start : start + n_sents]
        words = [w for ws, _ in group for w in ws]
        tags = [t for _, ts in group for t in ts]
        sent_starts: List[Union[bool, int, None]] = [i == 0 for ws, _ in group for i in range(len(ws))]
        tags = _repair_iob(tags)
        docs.append(Doc(vocab, words=words, ents=tags, sent_starts=sent_starts))
    return docs


def _repair_iob(tags: List[str]) -> List[str]:
    """An I- tag that does not continue an entity of its type starts one."""
    fixed = []
    previous = "O"
    for tag in tags:
        if tag.startswith("I-") and previous[2:] != tag[2:]:
            tag = "B-" + tag[2:]
        fixed.append(tag)
        previous = tag
    return fixed


def write_docbin(docs: List[Doc], output: PathLike) -> Path:
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    DocBin(docs=docs, store_user_data=False).to_disk(output)
    return output


__all__ = ["conllu_words", "find_input", "ud_docs", "uner_docs", "write_docbin"]
