"""Pretraining text: read, tokenize once, stream many times.

Inputs are plain-text files (also gzip-compressed), one paragraph or sentence
per line, or spaCy `.spacy` DocBin files. The first pass tokenizes them, drops
whitespace-only tokens, cuts lines longer than `max_length` tokens into
consecutive segments, counts words for the vocabulary, and writes one segment
per line (a JSON list of its tokens, so that a token holding a space, as a
`.spacy` file's tokens may, reads back as itself) to a gzip cache. Every epoch then
streams that cache: nothing is ever loaded whole, and the cache is reused by
later runs on the same inputs.

Text lines are split by one of `TOKENIZERS`: "spacy" (the configured
language's spaCy tokenizer, `spacy.blank(lang)`) or "whitespace" (the text is
already tokenized: tokens separated by whitespace, as `str.split()` splits
them). spaCy is imported only where the data needs it, for the "spacy"
tokenizer and for `.spacy` files; without it those raise `SpacyRequired`, and
pre-tokenized text trains with no spaCy installed. A spaCy token never holds
whitespace (its tokenizer splits at every whitespace character), so text
written as spaCy's tokens joined by spaces reads back under "whitespace" as
the same tokens (`pretokenize` writes such a file).

A share of the corpus (`part` of `parts`, see `shards.py`) is every
`parts`-th non-empty line (or DocBin sentence) of its files, starting at line
`part`: each process of a sharded run tokenizes and caches only its shares.
"""
import glob
import gzip
import hashlib
import json
import os
import time
import zlib
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, TextIO, Union

from ..bilm.errors import SpacyElmoError
from ..io.atomic import atomic_path
from ..io.file_lock import waiting_lock
from ..progress_bars import progress_bar

PathLike = Union[str, Path]
_CACHE_VERSION = 2  # 2: segments as JSON lists (1: tokens joined by spaces)
TOKENIZERS = ("spacy", "whitespace")


class SpacyRequired(SpacyElmoError, ImportError):
    """The data needs spaCy (its tokenizer, or a `.spacy` file) and spaCy is not installed."""


class CorpusError(SpacyElmoError, ValueError):
    """A corpus file cannot be read to its end: a .gz cut short or not gzip at all, a read error."""


def _unreadable(path: Path, err: BaseException, remedy: Optional[str] = None) -> CorpusError:
    """What is wrong with a file whose reading raised `err`, and `remedy` (by default, one that fits
    what is wrong), as one line naming it."""
    if isinstance(err, EOFError):
        what = "the gzip file is cut short (truncated: it ends before its end-of-stream marker)"
        fix = "replace it with a complete copy"
    elif isinstance(err, gzip.BadGzipFile):
        what = "not gzip data, although its name ends in .gz"
        fix = "compress it with gzip, or, if it is plain text, drop .gz from its name"
    elif isinstance(err, zlib.error):
        what, fix = f"the gzip data is corrupt ({err})", "replace it with a good copy"
    else:
        what, fix = f"cannot be read ({err})", "check the file"
    return CorpusError(f"{path}: {what}; {remedy or fix}")


# what reading a damaged file raises: EOFError (a .gz cut short), gzip.BadGzipFile (an OSError: not
# gzip), zlib.error (corrupt deflate data), OSError (a failing disk)
_READ_ERRORS = (EOFError, OSError, zlib.error)


def read_lines(path: PathLike, remedy: Optional[str] = None) -> Iterator[str]:
    """The lines of a plain or gzip text file (`open_text`); a damaged file is a `CorpusError` naming
    it, what is wrong and what to do (`remedy`, or one that fits), not an EOFError or gzip's own
    error from deep in a read."""
    path = Path(path)
    try:
        with open_text(path) as handle:
            yield from handle
    except _READ_ERRORS as err:
        raise _unreadable(path, err, remedy) from None


def _import_spacy(why: str) -> Any:
    """The spacy module, or SpacyRequired saying that `why` needs it and how to get it."""
    try:
        import spacy
    except ImportError:
        raise SpacyRequired(f"{why} needs spaCy, which is not installed: pip install spacy") from None
    return spacy


class LanguageError(SpacyElmoError, ValueError):
    """spaCy has no language `lang`, or cannot build its tokenizer (a package it needs is missing)."""


def blank_language(lang: str, why: str) -> Any:
    """`spacy.blank(lang)`; a LanguageError in one line where spaCy lacks the language (E048) or its
    tokenizer needs a package that is not installed (`ja`: SudachiPy, `vi`: pyvi), which spaCy only
    finds when the tokenizer is built; SpacyRequired (saying that `why` needs it) without spaCy."""
    spacy = _import_spacy(why)
    from spacy.util import get_lang_class

    try:
        get_lang_class(lang)
    except (ImportError, KeyError, ValueError) as err:
        raise LanguageError(f"no such spaCy language ({' '.join(str(err).split())})") from None
    try:
        return spacy.blank(lang)
    except (ImportError, KeyError, ValueError) as err:
        raise LanguageError(
            f"spaCy cannot build its {lang!r} tokenizer ({' '.join(str(err).split())})"
        ) from None


def _spacy_tokenizer(lang: str) -> Any:
    why = f'[corpus] tokenizer = "spacy" (splitting text with spacy.blank({lang!r})\'s tokenizer)'
    try:
        return blank_language(lang, why).tokenizer  # a Tokenizer (spaCy types it as any callable)
    except LanguageError as err:
        raise LanguageError(f"[corpus] lang {lang!r}: {err}") from None


def tokenize_lines(
    lines: Iterable[str], tokenizer: str = "spacy", lang: str = "en", batch_size: int = 1000
) -> Iterator[List[str]]:
    """One token list per line (whitespace tokens dropped): split by spaCy's `lang` tokenizer
    or, with tokenizer "whitespace", at whitespace (the lines are already tokenized)."""
    if tokenizer == "whitespace":
        for line in lines:
            yield line.split()
        return
    if tokenizer != "spacy":
        raise ValueError(f"tokenizer {tokenizer!r}: choose one of {TOKENIZERS}")
    for doc in _spacy_tokenizer(lang).pipe(lines, batch_size=batch_size):
        yield [t.text for t in doc if not t.is_space]


def open_text(path: PathLike) -> TextIO:
    """A text-mode handle on a plain or gzip file (decoding errors replaced, never fatal). Read as
    utf-8-sig: a byte-order mark (an editor's "UTF-8 with BOM") is dropped, as `embed` and `corpus` drop
    it, instead of joining the file's first token."""
    path = Path(path)
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8-sig", errors="replace")
    return path.open("r", encoding="utf-8-sig", errors="replace")


def is_glob_pattern(entry: Any) -> bool:
    """Whether a `[paths] train` entry is read as a glob pattern: a string with a wildcard (*, ?, [)
    that names no existing path (a file whose name holds a bracket is that file)."""
    return isinstance(entry, str) and any(c in entry for c in "*?[") and not Path(entry).exists()


def _expand(paths: Union[PathLike, Sequence[PathLike]]) -> List[Path]:
    if isinstance(paths, (str, Path)):
        paths = [paths]
    files: List[Path] = []
    for p in paths:
        if is_glob_pattern(p):
            matched = sorted(Path(m) for m in glob.glob(str(p), recursive=True))
            files.extend(m for m in matched if m.is_file())
            if not matched:
                raise FileNotFoundError(f"corpus pattern matches nothing: {p}")
            continue
        p = Path(p)
        if p.is_dir():
            files.extend(sorted(f for f in p.rglob("*") if f.is_file() and _readable_suffix(f)))
        elif p.is_file():
            files.append(p)
        else:
            raise FileNotFoundError(f"corpus path not found: {p}")
    if not files:
        raise FileNotFoundError(f"no .txt, .txt.gz or .spacy files under {list(map(str, paths))}")
    return files


def expand_paths(paths: Union[PathLike, Sequence[PathLike]]) -> List[Path]:
    """The files a `[paths] train` setting names: files, directories (their text and DocBin
    files, recursively, sorted) and glob patterns (sorted matches), in the order given."""
    return _expand(paths)


def _readable_suffix(path: Path) -> bool:
    name = path.name
    return name.endswith((".txt", ".txt.gz", ".spacy", ".gz"))


def _tokenized_lines(
    files: Sequence[Path],
    lang: str,
    batch_size: int = 1000,
    part: int = 0,
    parts: int = 1,
    tokenizer: str = "spacy",
) -> Iterator[List[str]]:
    """Token lists: one per text line, one per sentence (or doc) of DocBin files; with
    `parts` > 1 only every `parts`-th of them (per file), starting at `part`."""
    for path in files:
        if path.suffix == ".spacy":
            yield from _docbin_sentences(path, lang, part, parts)
            continue
        lines = (line.strip() for line in read_lines(path))
        lines = (line for line in lines if line)
        if parts > 1:
            lines = (line for i, line in enumerate(lines) if i % parts == part)
        yield from tokenize_lines(lines, tokenizer, lang, batch_size)


def _docbin_sentences(path: Path, lang: str, part: int, parts: int) -> Iterator[List[str]]:
    """A DocBin's sentences (its docs, where they have no sentence boundaries) as token lists."""
    _import_spacy(f"{path}: reading a .spacy (DocBin) file")
    from spacy.tokens import DocBin

    try:
        docbin = DocBin().from_disk(path)
    except (ValueError, KeyError, TypeError, zlib.error) as err:  # spaCy's E1014 names no file
        raise CorpusError(f"{path}: not a readable spaCy DocBin (.spacy) file, damaged or of another format "
                          f"({err}); rebuild it (python -m spacy_elmo corpus ...)") from None
    units = 0
    try:
        vocab = blank_language(lang, f"{path}: reading a .spacy (DocBin) file").vocab
    except LanguageError as err:
        raise LanguageError(f"{path}: reading it with [corpus] lang {lang!r}: {err}") from None
    for doc in docbin.get_docs(vocab):
        spans = doc.sents if doc.has_annotation("SENT_START") else [doc[:]]
        for span in spans:
            if units % parts == part:
                yield [t.text for t in span if not t.is_space]
            units += 1


def split_long(tokens: List[str], max_length: int) -> Iterator[List[str]]:
    """Consecutive segments of at most max_length tokens (0: no limit)."""
    if max_length <= 0 or len(tokens) <= max_length:
        if tokens:
            yield tokens
        return
    for start in range(0, len(tokens), max_length):
        yield tokens[start : start + max_length]


def text_segments(path: PathLike, lang: str, max_length: int, tokenizer: str = "spacy") -> List[List[str]]:
    """A text file's non-empty lines tokenized (spaCy's `lang` tokenizer, or "whitespace" for
    tokenized text), or a `.spacy` file's sentences, cut into segments of at most `max_length`
    tokens, as pretraining reads its files (`spacy_elmo perplexity` scores these)."""
    segments: List[List[str]] = []
    for tokens in _tokenized_lines([Path(path)], lang, tokenizer=tokenizer):
        segments.extend(split_long(tokens, max_length))
    return segments


def pretokenize(source: PathLike, target: PathLike, lang: str = "en") -> int:
    """Write `source`'s non-empty lines as spaCy's `lang` tokenizer splits them, tokens joined by
    a space, to `target` (gzip if it ends in .gz): pretraining on `target` with tokenizer
    "whitespace" reads the tokens that tokenizer "spacy" reads from `source`, without spaCy.
    Lines without a token are left out. Returns the number of lines written."""
    target = Path(target)
    written = 0
    with atomic_path(target) as tmp:
        out = gzip.open(tmp, "wt", encoding="utf-8") if target.suffix == ".gz" else tmp.open("w", encoding="utf-8")
        with out:
            lines = (line.strip() for line in read_lines(source))
            for tokens in tokenize_lines((line for line in lines if line), "spacy", lang):
                if tokens:
                    out.write(" ".join(tokens) + "\n")
                    written += 1
    return written


class TokenizedCorpus:
    """A corpus tokenized once into `cache_dir`; `segments()` streams it."""

    def __init__(self, cache_file: Path, counts_file: Path, info: Dict) -> None:
        self.cache_file = cache_file
        self.counts_file = counts_file
        self.info = info

    @property
    def n_segments(self) -> int:
        return int(self.info["segments"])

    @property
    def n_tokens(self) -> int:
        return int(self.info["tokens"])

    def segments(self) -> Iterator[List[str]]:
        remedy = f"delete {self.cache_file.parent} to tokenize the corpus again"
        for number, line in enumerate(read_lines(self.cache_file, remedy), 1):
            try:
                yield json.loads(line)
            except ValueError as err:  # a line cut short or edited by hand
                raise _unreadable(self.cache_file, OSError(f"line {number}: {err}"), remedy) from None

    def counts(self) -> Counter:
        try:
            with gzip.open(self.counts_file, "rt", encoding="utf-8") as handle:
                return Counter(json.load(handle))
        except _READ_ERRORS + (ValueError,) as err:  # ValueError: JSON cut short
            remedy = f"delete {self.counts_file.parent} to tokenize the corpus again"
            raise _unreadable(self.counts_file, err, remedy) from None

    @classmethod
    def prepare(
        cls,
        paths: Union[PathLike, Sequence[PathLike]],
        cache_dir: PathLike,
        lang: str = "en",
        max_length: int = 64,
        max_segments: int = 0,
        progress: bool = True,
        part: int = 0,
        parts: int = 1,
        tokenizer: str = "spacy",
    ) -> "TokenizedCorpus":
        """Tokenize `paths` into the cache (once) and return it. With `parts` > 1, only the
        share `part` of `parts` (see the module docstring), which may be empty; otherwise
        a corpus without tokens is a ValueError. `tokenizer` is one of `TOKENIZERS`.

        Runs sharing `cache_dir` tokenize an input once: under a file lock per cache entry, one
        tokenizes and the others say they wait, then read its cache. Temporary files that a run
        killed while tokenizing left in the entry are deleted once untouched for an hour."""
        if tokenizer not in TOKENIZERS:
            raise ValueError(f"tokenizer {tokenizer!r}: choose one of {TOKENIZERS}")
        files = _expand(paths)
        key = _cache_key(files, lang, max_length, max_segments, part, parts, tokenizer)
        cache_dir = Path(cache_dir) / key
        cache_file = cache_dir / "segments.txt.gz"
        counts_file = cache_dir / "counts.json.gz"
        info_file = cache_dir / "info.json"
        if info_file.is_file():
            _remove_abandoned(cache_dir)
            return cls(cache_file, counts_file, json.loads(info_file.read_text()))
        cache_dir.mkdir(parents=True, exist_ok=True)
        lock = cache_dir.parent / f".{key}.lock"
        waiting = f"tokenized corpus: another run is tokenizing into {cache_dir}; waiting for it"
        with waiting_lock(lock, waiting):
            if info_file.is_file():  # tokenized by the run this one waited for
                return cls(cache_file, counts_file, json.loads(info_file.read_text()))
            _remove_abandoned(cache_dir)
            info = _tokenize(
                files, cache_file, counts_file, lang, max_length, max_segments, progress, part, parts, tokenizer
            )
            with atomic_path(info_file) as tmp:  # written last: the cache is complete
                tmp.write_text(json.dumps(info, indent=2))
        # complete: a later run finds it before it locks, and one waiting on this file finds it under the lock
        lock.unlink(missing_ok=True)
        return cls(cache_file, counts_file, info)


# a temporary file untouched this long was left by a killed run (a live one writes every few seconds)
ABANDONED_AFTER_S = 3600.0


def _remove_abandoned(cache_dir: Path) -> None:
    """Delete the temporary files a killed run left in a cache entry (`.NAME.PID-TOKEN.tmp`, as large
    as the tokenized corpus), judged by age: a lock that holds only on one machine (a cache shared over
    NFS or FUSE by runs on two) let a second run delete a first run's file while it was written."""
    now = time.time()
    for candidate in cache_dir.glob(".*.tmp"):
        try:
            if now - candidate.stat().st_mtime > ABANDONED_AFTER_S:
                candidate.unlink()
        except FileNotFoundError:  # committed or removed meanwhile
            pass


def _tokenize(
    files: Sequence[Path],
    cache_file: Path,
    counts_file: Path,
    lang: str,
    max_length: int,
    max_segments: int,
    progress: bool,
    part: int,
    parts: int,
    tokenizer: str,
) -> Dict[str, Any]:
    """Write the segments and the word counts of `files` (or of their share `part` of `parts`) to the
    cache, each file complete or not at all, and return the cache's info record (not yet written)."""
    counts: Counter = Counter()
    n_segments = n_tokens = 0
    names = ", ".join(f.name for f in files)
    bar = progress_bar(desc=f"tokenizing {names}", unit=" tok", unit_scale=True, disable=not progress)
    try:
        with atomic_path(cache_file) as tmp, gzip.open(tmp, "wt", encoding="utf-8", compresslevel=3) as out:
            for tokens in _tokenized_lines(files, lang, part=part, parts=parts, tokenizer=tokenizer):
                for segment in split_long(tokens, max_length):
                    # as JSON: a `.spacy` token may hold a space (a Vietnamese word from UD), and
                    # every other path (`perplexity`, the component, `embed`) reads it with the space
                    out.write(json.dumps(segment, ensure_ascii=False) + "\n")
                    counts.update(segment)
                    n_segments += 1
                    n_tokens += len(segment)
                    bar.update(len(segment))
                    if max_segments and n_segments >= max_segments:
                        break
                if max_segments and n_segments >= max_segments:
                    break
            if n_segments == 0 and parts == 1:
                raise ValueError(f"no tokens found in {[str(f) for f in files]}")
    finally:
        bar.close()
    with atomic_path(counts_file) as tmp, gzip.open(tmp, "wt", encoding="utf-8") as handle:
        json.dump(dict(counts), handle)
    info = {
        "files": [str(f) for f in files],
        "lang": lang,
        "tokenizer": tokenizer,
        "max_length": max_length,
        "segments": n_segments,
        "tokens": n_tokens,
        "types": len(counts),
        "version": _CACHE_VERSION,
        **({"part": part, "parts": parts} if parts > 1 else {}),
    }
    return info


def _cache_key(
    files: Sequence[Path],
    lang: str,
    max_length: int,
    max_segments: int,
    part: int = 0,
    parts: int = 1,
    tokenizer: str = "spacy",
) -> str:
    digest = hashlib.sha1()
    for f in files:
        stat = f.stat()
        # the name's bytes as the file system has them (a name that is not UTF-8 has no str encoding)
        digest.update(os.fsencode(f.resolve()) + f"|{stat.st_size}|{stat.st_mtime_ns}".encode())
    digest.update(f"{lang}|{max_length}|{max_segments}|{_CACHE_VERSION}".encode())
    if parts > 1:  # only for a share: a whole corpus's key, and the caches made under it, stay valid
        digest.update(f"|part {part} of {parts}".encode())
    if tokenizer != "spacy":  # likewise only for a tokenizer other than spaCy's, the default
        digest.update(f"|tokenizer {tokenizer}".encode())
    return digest.hexdigest()[:16]


def iter_segments(corpus: TokenizedCorpus, limit_tokens: int = 0) -> Iterable[List[str]]:
    """The corpus' segments, stopping once `limit_tokens` tokens were given (0: all)."""
    seen = 0
    for segment in corpus.segments():
        yield segment
        seen += len(segment)
        if limit_tokens and seen >= limit_tokens:
            return


__all__ = [
    "TOKENIZERS",
    "CorpusError",
    "LanguageError",
    "SpacyRequired",
    "TokenizedCorpus",
    "blank_language",
    "expand_paths",
    "is_glob_pattern",
    "iter_segments",
    "open_text",
    "pretokenize",
    "read_lines",
    "split_long",
    "text_segments",
    "tokenize_lines",
]
