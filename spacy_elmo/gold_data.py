"""Evaluation corpora to spaCy DocBin: UD CoNLL-U (tags, morphology, dependencies) and
Universal NER IOB2 (entities). Both may be gzip-compressed, with or without
the `.gz` in the name the caller gives. Sentences are grouped
`n_sents` to a doc, with gold sentence boundaries.

A file that is not what its reader expects (not UTF-8 text, truncated, another
format) raises one `CorpusError` naming the file and the line, never a
traceback from deep inside a converter and never a silently empty result.
"""
import codecs
import gzip
import itertools
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, List, Optional, Tuple, Union

from spacy.tokens import Doc, DocBin
from spacy.vocab import Vocab

from .bilm.errors import SpacyElmoError
from .io.atomic import atomic_path

PathLike = Union[str, Path]


class CorpusError(SpacyElmoError, ValueError):
    """A corpus file that cannot be read as its format; the message names the file and line."""


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
    if path.is_dir():
        raise CorpusError(f"{path}: a directory; name the corpus file in it (a .conllu or .iob2 file, plain or .gz)")
    raise CorpusError(f"{path}: no such file (nor {candidates[1].name} beside it)")


def _read_text(path: PathLike) -> str:
    """The text of a corpus file, gzipped or not (found by its first bytes, not its name);
    a CorpusError for missing, binary, undecodable or truncated files."""
    path = find_input(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise CorpusError(f"{path}: cannot read the file ({err.strerror or err})") from None
    return decode_corpus(raw, path)


def decode_corpus(raw: bytes, path: PathLike = "<bytes>", errors: str = "strict") -> str:
    """The text of a corpus file's bytes, gunzipped if they are gzip (found by their first
    bytes), without a leading byte-order mark; a CorpusError naming `path` and the line for
    binary, undecodable or truncated data. `errors="replace"` reads on instead: invalid bytes
    and NUL bytes become U+FFFD."""
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (EOFError, OSError, zlib.error) as err:
            raise CorpusError(f"{path}: not a complete gzip file ({err}); is it truncated?") from None
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8):]
    if errors == "replace":
        return raw.decode("utf-8", errors="replace").replace("\x00", "\ufffd")
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise CorpusError(f"{path}: line {_line_of(raw, nul)} holds a NUL byte: a binary file, not text")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise CorpusError(f"{path}: line {_line_of(raw, err.start)} is not valid UTF-8 ({err.reason})") from None


def _line_of(raw: bytes, offset: int) -> int:
    return raw.count(b"\n", 0, offset) + 1


def conllu_words(path: PathLike, limit: int = 0) -> List[List[str]]:
    """The word forms of each sentence of a CoNLL-U file (syntactic words; no spaCy objects)."""
    return [[row[1] for row in rows] for rows in conllu_rows(path, limit)]


def conllu_rows(path: PathLike, limit: int = 0) -> List[List[List[str]]]:
    """The columns of each syntactic word, sentence by sentence, of a CoNLL-U file
    (comments, multi-word token and empty-node lines left out)."""
    return conllu_rows_of_text(_read_text(path), limit)


def _lines(text: str) -> List[str]:
    """A CoNLL-U file's lines: split at "\n" only (a form may hold U+2028 or a form feed, which
    `str.splitlines` would also split at), without a "\r" before it."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it starts none
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def conllu_rows_of_text(text: str, limit: int = 0) -> List[List[List[str]]]:
    """`conllu_rows` of a CoNLL-U file's text (for callers that read the file themselves)."""
    sentences: List[List[List[str]]] = []
    rows: List[List[str]] = []
    for line in _lines(text) + [""]:
        if not line.strip():
            if rows:
                sentences.append(rows)
                rows = []
                if limit and len(sentences) >= limit:
                    break
            continue
        if line.startswith("#"):
            continue
        columns = line.split("\t")
        if columns[0].isdigit():
            rows.append(columns)
    return sentences


def check_counts(n_sents: int, limit: int) -> None:
    """A ValueError for a doc of fewer than 1 sentence or a negative `limit` (0: all), which
    would fail deep in a converter or, as a slice's end, silently drop the last sentences."""
    if n_sents < 1:
        raise ValueError(f"n_sents must be 1 or more, got {n_sents}")
    if limit < 0:
        raise ValueError(f"limit must be 0 (all) or more, got {limit}")


def ud_docs(path: PathLike, n_sents: int = 10, limit: int = 0) -> List[Doc]:
    """Docs of `n_sents` gold sentences each, from a CoNLL-U file (syntactic words as tokens).

    The converter is given the same lines the check read (`_lines`: "\r\n" endings and all), one
    sentence's token lines apart from the next's by one empty line: it splits at "\n\n" and takes
    every line of a block for a token, so a "\r", a run of empty lines or a block of comments alone
    would reach it as a malformed token. A file without token lines gives no docs.
    """
    from spacy.training.converters import conllu_to_docs

    check_counts(n_sents, limit)
    read, sentences = _conllu_sentences(_read_text(path), limit)
    check_conllu("\n".join(read), path)
    if not sentences:
        return []
    text = "\n\n".join("\n".join(rows) for rows in sentences) + "\n"
    return list(conllu_to_docs(text, n_sents=n_sents, no_print=True))


def _conllu_sentences(text: str, limit: int = 0) -> Tuple[List[str], List[List[str]]]:
    """(the lines read, each sentence's token lines): a CoNLL-U file's `_lines` up to the end of
    its `limit`-th sentence (0: all), and the lines of each sentence among them that are not
    comments; a block of comments alone is no sentence. The lines read are a prefix of the
    file's, so a check of them names the file's own line numbers."""
    lines = _lines(text)
    sentences: List[List[str]] = []
    rows: List[str] = []
    for number, line in enumerate(lines + [""]):
        if line.strip():
            if not line.startswith("#"):
                rows.append(line)
            continue
        if rows:
            sentences.append(rows)
            rows = []
            if limit and len(sentences) >= limit:
                return lines[:number], sentences
    return lines, sentences


_CONLLU_ID = re.compile(r"^(\d+|\d+-\d+|\d+\.\d+)$", re.ASCII)


@dataclass
class _SentenceIds:
    """What the check has seen of one sentence's token IDs: word IDs run 1, 2, 3, ...; a multi-word
    token range `a-b` starts at the next word ID; empty nodes `n.1`, `n.2`, ... follow word n."""

    words: int = 0  # the last word ID (the sentence's words so far)
    empty: int = 0  # the last empty node's number after word `words`
    range_id: str = ""  # the last multi-word token range, its last word and its line
    range_end: int = 0
    range_line: int = 0


def check_conllu(text: str, path: PathLike, check_heads: bool = True) -> None:
    """Every token line has CoNLL-U's 10 columns, a token ID in order (word IDs 1, 2, 3, ... within
    a sentence) and a form, and (`check_heads`) every head is a number pointing inside its sentence;
    the first line that breaks this is a CorpusError. Readers that take only the word forms
    (embedding) pass check_heads=False: unparsed text has "_" heads. The order of IDs is what shows
    a missing blank line: spaCy's converter would take two sentences for one broken tree."""
    ids = _SentenceIds()
    heads: List[Tuple[int, int]] = []  # (line number, head) of the sentence's words
    lines = _lines(text)
    for number, line in enumerate(lines + [""], 1):
        if not line.strip():
            _check_sentence_end(ids, heads, path)
            ids, heads = _SentenceIds(), []
            continue
        if line.startswith("#"):
            continue
        columns = _token_columns(line, number, number == len(lines), path)
        _check_token_id(columns[0], ids, path, number)
        if not columns[1].strip():
            raise CorpusError(f"{path}: line {number}: the form (column 2) is empty")
        if check_heads and columns[0].isdigit():
            heads.append((number, _head(columns[6], f"{path}: line {number}")))


def _token_columns(line: str, number: int, last: bool, path: PathLike) -> List[str]:
    """The 10 columns of a token line whose first is a token ID; a CorpusError for anything else
    (fewer columns on the file's `last` line hint at a truncated file)."""
    columns = line.split("\t")
    if len(columns) != 10:
        raise CorpusError(
            f"{path}: line {number}: expected 10 tab-separated columns (CoNLL-U), found {len(columns)}"
            + (" (a truncated file?)" if last else "")
        )
    if not _CONLLU_ID.match(columns[0]):
        raise CorpusError(f"{path}: line {number}: {columns[0]!r} is not a CoNLL-U token ID")
    return columns


def _check_token_id(token_id: str, ids: _SentenceIds, path: PathLike, number: int) -> None:
    """A CorpusError naming the file and line `number` for a token ID out of order in its sentence;
    `ids` takes it in. `token_id` matches `_CONLLU_ID`."""
    where = f"{path}: line {number}"
    if "-" in token_id:
        _check_range(token_id, ids, where)
        ids.range_line = number
    elif "." in token_id:
        _check_empty_node(token_id, ids, where)
    else:
        _check_word_id(int(token_id), ids, where)


def _check_word_id(word_id: int, ids: _SentenceIds, where: str) -> None:
    """Word IDs run 1, 2, 3, ...: one that starts again at 1 is most likely a second sentence
    without the blank line before it."""
    expected = ids.words + 1
    if word_id != expected:
        if ids.words == 0:
            raise CorpusError(f"{where}: word ID {word_id}: expected 1 (word IDs run 1, 2, 3, ... within a sentence)")
        if word_id == 1:
            raise CorpusError(f"{where}: word ID 1 follows word {ids.words}: missing blank line between sentences?")
        raise CorpusError(f"{where}: word ID {word_id} follows word {ids.words}: expected {expected}")
    ids.words, ids.empty = word_id, 0


def _check_range(token_id: str, ids: _SentenceIds, where: str) -> None:
    """A multi-word token range `a-b` starts at the next word ID, spans two words or more, and
    does not overlap the range before it."""
    first, last = (int(part) for part in token_id.split("-"))
    if first != ids.words + 1:
        raise CorpusError(f"{where}: range {token_id}: expected one starting at {ids.words + 1} (the next word ID)")
    if last <= first:
        raise CorpusError(f"{where}: range {token_id} does not end after it starts")
    if ids.range_end > ids.words:
        raise CorpusError(f"{where}: range {token_id} overlaps the range {ids.range_id} on line {ids.range_line}")
    ids.range_id, ids.range_end = token_id, last


def _check_empty_node(token_id: str, ids: _SentenceIds, where: str) -> None:
    """Empty nodes `n.1`, `n.2`, ... follow word n (`0.1` comes before the first word)."""
    word, node = (int(part) for part in token_id.split("."))
    if word != ids.words or node != ids.empty + 1:
        raise CorpusError(
            f"{where}: empty node {token_id} follows word {ids.words}: expected {ids.words}.{ids.empty + 1}"
        )
    ids.empty = node


def _head(value: str, where: str) -> int:
    """A HEAD column's number; ASCII digits only (`"²".isdigit()` is true, but `int("²")` raises)."""
    if not (value.isascii() and value.isdecimal()):
        raise CorpusError(f"{where}: head {value!r} is not a number")
    return int(value)


def _check_sentence_end(ids: _SentenceIds, heads: List[Tuple[int, int]], path: PathLike) -> None:
    """At a sentence's end, every head points at one of its words and its last range's words are all
    there; a CorpusError naming the line that points past the end (a truncated file, most likely)."""
    for at, head in heads:
        if head > ids.words:
            raise CorpusError(
                f"{path}: line {at}: head {head} points past the sentence's {ids.words} words (a truncated file?)"
            )
    if ids.range_end > ids.words:
        raise CorpusError(
            f"{path}: line {ids.range_line}: range {ids.range_id} ends past the sentence's {ids.words} words "
            "(a truncated file?)"
        )


_IOB2_TAG = re.compile(r"^(O|[BI]-\S+)$")


def _iob2_sentences(text: str, path: PathLike = "<text>") -> Iterator[Tuple[List[str], List[str]]]:
    """(words, tags) per sentence of `INDEX<TAB>WORD<TAB>TAG...` lines; anything else (an empty word
    too) is refused. Lines end at "\n" only, as in CoNLL-U (`_lines`): a word may hold U+2028 or a
    form feed, which `str.splitlines` would split at, and the line numbers would drift."""
    words: List[str] = []
    tags: List[str] = []
    for number, line in enumerate(_lines(text) + [""], 1):
        if not line.strip():
            if words:
                yield words, tags
            words, tags = [], []
            continue
        if line.startswith("#"):
            continue
        columns = line.split("\t")
        if len(columns) < 3 or not columns[0].isdigit():
            raise CorpusError(
                f"{path}: line {number}: expected INDEX<TAB>WORD<TAB>TAG (Universal NER IOB2), got {line[:60]!r}"
            )
        if not _IOB2_TAG.match(columns[2]):
            raise CorpusError(
                f"{path}: line {number}: tag {columns[2][:30]!r} is not IOB2 (O, B-TYPE or I-TYPE); "
                "is this a Universal NER file?"
            )
        if not columns[1]:
            raise CorpusError(f"{path}: line {number}: the word (column 2) is empty")
        if int(columns[0]) != len(words) + 1:  # as CoNLL-U's reader checks its word IDs
            raise CorpusError(
                f"{path}: line {number}: index {columns[0]} follows word {len(words)}"
                f"{': missing blank line between sentences?' if columns[0] == '1' else ''}"
            )
        words.append(columns[1])
        tags.append(columns[2])


def uner_docs(path: PathLike, n_sents: int = 10, limit: int = 0, vocab: Optional[Vocab] = None) -> List[Doc]:
    """Docs with gold entities (PER, LOC, ORG) from a Universal NER IOB2 file."""
    check_counts(n_sents, limit)
    vocab = vocab or Vocab()
    read = _iob2_sentences(_read_text(path), path)
    sentences = list(itertools.islice(read, limit) if limit else read)  # --limit: the rest is not read
    docs = []
    for start in range(0, len(sentences), n_sents):
        group = sentences[start : start + n_sents]
        words = [w for ws, _ in group for w in ws]
        # repaired sentence by sentence: an entity never spans two gold sentences, whatever n_sents is
        tags = [t for _, ts in group for t in _repair_iob(ts)]
        sent_starts: List[Union[bool, int, None]] = [i == 0 for ws, _ in group for i in range(len(ws))]
        docs.append(Doc(vocab, words=words, ents=tags, sent_starts=sent_starts))
    return docs


def _repair_iob(tags: List[str]) -> List[str]:
    """One sentence's tags, where an I- tag that does not continue an entity of its type starts one
    (spaCy refuses an I- without a B- before it)."""
    fixed = []
    previous = "O"
    for tag in tags:
        if tag.startswith("I-") and previous[2:] != tag[2:]:
            tag = "B-" + tag[2:]
        fixed.append(tag)
        previous = tag
    return fixed


def write_docbin(docs: List[Doc], output: PathLike) -> Path:
    """`docs` as a DocBin file, written whole or not at all (a failure leaves no half-written file)."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(output) as tmp:
        DocBin(docs=docs, store_user_data=False).to_disk(tmp)
    return output


__all__ = [
    "check_conllu", "check_counts", "conllu_rows", "conllu_rows_of_text", "conllu_words", "decode_corpus", "find_input",
    "ud_docs", "uner_docs", "write_docbin", "CorpusError",
]
