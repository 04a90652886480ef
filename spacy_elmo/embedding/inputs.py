"""What `embed` reads: input files in four formats, cut into units, each embedded alone.

A unit is what the biLM reads from a zero state and what the output is keyed
by (one HDF5 dataset, one Parquet row):

* text (any extension but the ones below): one unit per line, tokens split on
  whitespace; an empty line is an empty unit; a line ends at "\n", "\r\n"
  or a lone "\r" (universal newlines), so a file with lone "\r"s has more
  lines, and keys, than `wc -l` counts;
* JSONL (`.jsonl`, `.ndjson`): one unit per non-blank line, an object with
  `"tokens"` (a list of strings, used as given) or `"text"` (tokenized by a
  spaCy tokenizer: `spacy.blank(lang)` or a loaded pipeline's `make_doc`);
  blank lines are not units, so a unit's number stays its line number;
* CoNLL-U (`.conllu`, `.conllu.gz`): one unit per sentence, its syntactic
  words (read by `spacy_elmo.gold_data`'s CoNLL-U reader);
* `.spacy` (a DocBin, or `.spacy.gz` gzipped): one unit per sentence of each
  doc where the doc has sentence boundaries, else one unit per doc; spaCy's
  own tokens, every one of them, so a unit's vectors line up with
  `doc[start:end]`.

In every format a token that is empty or only whitespace (spaCy's space
tokens, `""` or `" "` in JSONL "tokens") stays in the unit but is not read
by the biLM: its row is zeros (`dump.embed_skipping_space`), as the `elmo`
component does.

Units are numbered from 0 within their file. A unit's key is its number when
there is one input file (the published layout: "0", "1", ...) and
"FILE:NUMBER" with several (FILE: the file's position in the sorted input
list), so keys are unique and ordered as the input.

Paths may be local or fsspec URLs (`s3://...`, `gs://...`); every file is
opened through `open_input`, and a worker opens only the files it embeds.
A file named twice (`a.txt` and `./a.txt`) is read once, and a glob leaves
out the run's own output files (`expand_inputs`).
This module imports spaCy only to read `.spacy`, CoNLL-U or text to tokenize.
"""
import functools
import io
import glob
import json
import os
import re
from typing import IO, Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from ..bilm.errors import SpacyElmoError

FORMATS = ("text", "jsonl", "conllu", "spacy")
ENCODING_ERRORS = ("strict", "replace")
_EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".conllu": "conllu", ".spacy": "spacy"}  # and their .gz
_UNIT_KEY = re.compile(r"^\d+(:\d+)?$")


class DumpError(SpacyElmoError, ValueError):
    """Bad input, output or settings for bulk embedding; the message names the file and line."""


class Unit(NamedTuple):
    """One unit of input: what the biLM reads at once, and where it came from."""

    file: int  # position of its file in the input list
    number: int  # its number within the file (line, sentence or JSON line)
    tokens: List[str]
    text: str  # what `sentence_to_index` maps to its key: the line, JSON text, or the tokens joined by spaces
    doc: int  # .spacy: the doc it belongs to; other formats: `number`
    start: int  # .spacy: its first token in that doc; other formats: 0


def unit_key(file: int, number: int, n_files: int) -> str:
    """The dataset name (HDF5) and `key` column (Parquet) of a unit."""
    return str(number) if n_files == 1 else f"{file}:{number}"


def is_unit_key(name: str) -> bool:
    """Whether an HDF5 dataset name is a unit's (not `sentence_to_index`)."""
    return _UNIT_KEY.match(name) is not None


def key_order(key: str) -> Tuple[int, ...]:
    """Sort key of a unit key: input order."""
    return tuple(int(part) for part in key.split(":"))


# -- paths -------------------------------------------------------------------------------


def is_url(path: str) -> bool:
    """A remote fsspec URL (`file://` and plain paths are local)."""
    return "://" in path and not path.startswith("file://")


def local_path(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def open_input(path: str, mode: str = "rb") -> IO:
    """Open an input file, local or an fsspec URL, for reading ("rb"; text modes are UTF-8).

    Every reader goes through this function, so the files a run opens are the
    files it embeds (the sharding tests count the calls).
    """
    if is_url(path):
        import fsspec

        return fsspec.open(path, mode).open()
    return open(local_path(path), mode)


def path_identity(path: str) -> str:
    """What tells two spellings of one file apart from two files: the resolved path of a local file
    (`os.path.realpath`: `a.txt`, `./a.txt` and a symlink to it are one file), and of an fsspec URL
    its protocol and the path its filesystem strips it to (`memory://a.txt` is `memory:///a.txt`).

    Used to drop an input named twice, and to leave a run's own output out of its input.
    """
    if not is_url(path):
        return os.path.realpath(local_path(path)).replace(os.sep, "/")
    protocol = path.split("://", 1)[0]
    try:
        import fsspec

        _, stripped = fsspec.core.url_to_fs(path)
    except (ImportError, ValueError):  # no filesystem for it here: the URL as given
        return path
    return f"{protocol}://{stripped}"


def output_matcher(output: str) -> Callable[[str], bool]:
    """A test of whether a path identity (`path_identity`) is a file that a run writing `output`
    writes or leaves: OUTPUT, OUTPUT.partial (and .partial.corrupt), shard files
    OUTPUT.shard-K-of-N (and their .partial), their lock files, and anything inside a Parquet
    OUTPUT directory.

    Why: a glob over the output's folder is expanded afresh on every run, so without this it would
    read the run's own .partial on --resume, the old OUTPUT on --overwrite, and another shard's file
    (so shards would see different input lists).
    """
    wanted = path_identity(output).rstrip("/")
    folder, _, name = wanted.rpartition("/")
    shard = r"(\.shard-\d+-of-\d+)?"
    names = re.compile(rf"^{re.escape(name)}{shard}(\.partial(\.corrupt)?)?$|^\.{re.escape(name)}{shard}\.lock$")

    def is_output(identity: str) -> bool:
        if identity.startswith(wanted + "/"):
            return True
        there, _, base = identity.rpartition("/")
        return there == folder and names.match(base) is not None

    return is_output


def expand_inputs(patterns: Sequence[str], output: Optional[str] = None) -> List[str]:
    """The input files `patterns` name: paths, globs (`data/*.txt`, `**` recursive) or fsspec
    URLs and URL globs, each glob's matches sorted, in the order given; a file named twice (under
    any spelling, `path_identity`) is kept once, at its first spelling.

    With `output` (the run's OUTPUT), a glob's matches leave out the files the run writes
    (`output_matcher`), and such a file named on its own is a DumpError. A pattern that names
    nothing, or a directory, is a DumpError, so a typo never silently embeds less than asked.
    """
    is_output = output_matcher(str(output)) if output is not None else (lambda identity: False)
    files: Dict[str, str] = {}  # identity -> first spelling
    for pattern in patterns:
        pattern = str(pattern)
        found = _matches(pattern)
        if not found:
            raise DumpError(f"{pattern}: no such file" + (" (the glob matches nothing)" if is_glob(pattern)
                                                          else ""))
        kept = [(path_identity(path), path) for path in found]
        if not is_glob(pattern) and is_output(kept[0][0]):
            raise DumpError(f"{pattern}: is this run's own output ({output}), not an input; name another output")
        kept = [(identity, path) for identity, path in kept if not is_output(identity)]
        if not kept:
            raise DumpError(f"{pattern}: the glob matches only this run's own output ({output}) and its files")
        for identity, path in kept:
            files.setdefault(identity, path)
    return list(files.values())


def is_glob(pattern: str) -> bool:
    """Whether an input pattern is read as a glob: it has a wildcard (*, ?, [) and names no file (local or
    remote: a file named "data[1].txt" is that file)."""
    if not glob.has_magic(pattern):
        return False
    if is_url(pattern):
        import fsspec

        fs, _ = fsspec.core.url_to_fs(pattern)
        return not fs.isfile(pattern)
    return not os.path.isfile(local_path(pattern))


def _matches(pattern: str) -> List[str]:
    """The files one pattern names (a glob's sorted), [] for none; a local directory is a DumpError."""
    if is_url(pattern):
        import fsspec

        fs, _ = fsspec.core.url_to_fs(pattern)
        protocol = pattern.split("://", 1)[0]
        if is_glob(pattern):
            return [p if "://" in p else f"{protocol}://{p}" for p in sorted(fs.glob(pattern))]
        return [pattern] if fs.isfile(pattern) else []
    path = local_path(pattern)
    if is_glob(pattern):  # a file named "data[1].txt" is that file
        return sorted(p for p in glob.glob(path, recursive=True) if os.path.isfile(p))
    if os.path.isdir(path):
        raise DumpError(f"{pattern}: a directory; name its files, e.g. {os.path.join(pattern, '*.txt')}")
    return [path] if os.path.isfile(path) else []


def detect_format(path: str, given: Optional[str] = None) -> str:
    """The format of an input file: `given` when set (not "auto"), else from its extension."""
    if given and given != "auto":
        if given not in FORMATS:
            raise DumpError(f"unknown input format {given!r}; choose from {('auto',) + FORMATS}")
        return given
    name = path.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return _EXTENSIONS.get(os.path.splitext(name)[1], "text")


def shard_files(n_files: int, shard: Tuple[int, int]) -> Tuple[List[int], Tuple[int, int]]:
    """(files this shard opens, unit sharding inside each of them).

    One input file: every shard reads it and takes the units whose number %
    N == K. Several: shard K takes whole files (file position % N == K) and
    every unit in them, so no shard opens a file it does not embed.
    """
    k, n = shard
    if not 0 <= k < n:
        raise DumpError(f"shard {k}/{n}: need 0 <= K < N")
    if n_files == 1:
        return [0], shard
    return [i for i in range(n_files) if i % n == k], (0, 1)


# -- reading -----------------------------------------------------------------------------


def read_lines(path: str, encoding_errors: str = "strict", lone_cr: bool = True) -> Iterator[Tuple[int, str]]:
    """(line number, line text without its newline) of a UTF-8 text file, gunzipped if it is
    gzip (found by its first bytes), without a leading byte-order mark.

    Lines end at \n, \r\n and, with `lone_cr` (text files), a lone \r; without it (JSON Lines, whose
    records end at \n only, and where \r between tokens is whitespace) only at \n and \r\n.

    encoding_errors: "strict" (a DumpError naming the first line that is not
    UTF-8 text: invalid bytes, or a NUL byte as in binary files) or "replace"
    (invalid bytes and NUL bytes become U+FFFD).
    """
    import gzip
    import zlib

    if encoding_errors not in ENCODING_ERRORS:
        raise DumpError(f"unknown encoding error handling {encoding_errors!r}; choose from {ENCODING_ERRORS}")
    strict = encoding_errors == "strict"
    # surrogateescape keeps every invalid byte visible (as U+DC80..U+DCFF) without
    # changing where lines end, so the error can name its line
    errors = "surrogateescape" if strict else "replace"
    try:
        raw = open_input(str(path), "rb")
    except OSError as err:
        raise DumpError(f"{path}: cannot read the file ({err.strerror or err})") from None
    try:
        if not hasattr(raw, "peek"):  # fsspec's files (a streamed HTTP one cannot seek back)
            raw = io.BufferedReader(_Readable(raw))
        compressed = raw.peek(2)[:2] == b"\x1f\x8b"  # look without consuming
    except OSError as err:
        raw.close()
        raise DumpError(f"{path}: cannot read the file ({err.strerror or err})") from None
    stream = gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw
    with io.TextIOWrapper(stream, encoding="utf-8-sig", errors=errors, newline="" if lone_cr else "\n") as handle:
        try:
            for number, line in enumerate(handle):
                if strict and (_NOT_TEXT.search(line) is not None):
                    raise DumpError(_not_text_message(path, number, line))
                yield number, line.rstrip("\r\n").replace("\x00", "\ufffd")
        except (EOFError, zlib.error, gzip.BadGzipFile) as err:
            raise DumpError(f"{path}: not a complete gzip file ({err}); is it truncated?") from None
        finally:
            if compressed:
                raw.close()


class _Readable(io.RawIOBase):
    """A file object with only `read` (and `close`) as the raw stream a BufferedReader can peek into."""

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.handle.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self.handle.close()
        super().close()


_NOT_TEXT = re.compile("[\udc80-\udcff\x00]")


def _not_text_message(path: str, number: int, line: str) -> str:
    found = _NOT_TEXT.search(line)
    assert found is not None  # the caller found one
    char = found.group()
    what = "a NUL byte (a binary file?)" if char == "\x00" else f"the byte 0x{ord(char) - 0xDC00:02x}, not UTF-8"
    return (
        f"{path}: line {number + 1} (column {found.start() + 1}) holds {what}; fix the file, or pass "
        "--encoding-errors replace to read on (invalid bytes and NUL bytes become U+FFFD)"
    )


def check_text(path: str, encoding_errors: str = "strict") -> None:
    """Read a text file once, so that bad input fails before any work is done."""
    for _ in read_lines(path, encoding_errors):
        pass


Tokenizer = Callable[[str], List[str]]


@functools.lru_cache(maxsize=4)
def make_tokenizer(lang: Optional[str] = None, pipeline: Optional[str] = None) -> Tokenizer:
    """A spaCy tokenizer for JSONL `"text"`: `spacy.blank(lang)`'s, or a pipeline's `make_doc`
    (a package name or a path; its components are not run). Loaded once per process."""
    import spacy

    if pipeline:
        try:
            nlp = spacy.load(pipeline)
        except (OSError, IOError, ValueError) as err:
            raise DumpError(f"--pipeline {pipeline}: cannot load it ({err})") from None
    else:
        try:
            nlp = spacy.blank(lang or "")
        except (ImportError, KeyError, ValueError) as err:
            raise DumpError(f"--lang {lang}: no such spaCy language ({err})") from None
    return lambda text: [token.text for token in nlp.make_doc(text)]


def read_units(
    path: str,
    fmt: str,
    file: int = 0,
    encoding_errors: str = "strict",
    lang: Optional[str] = None,
    pipeline: Optional[str] = None,
) -> Iterator[Unit]:
    """The units of one input file, in order (see the module docstring)."""
    if fmt == "text":
        for number, line in read_lines(path, encoding_errors):
            yield Unit(file, number, line.split(), line, number, 0)
    elif fmt == "jsonl":
        yield from _jsonl_units(path, file, encoding_errors, lang, pipeline)
    elif fmt == "conllu":
        yield from _conllu_units(path, file, encoding_errors)
    elif fmt == "spacy":
        yield from _docbin_units(path, file)
    else:
        raise DumpError(f"unknown input format {fmt!r}; choose from {FORMATS}")


def _jsonl_units(path: str, file: int, encoding_errors: str, lang: Optional[str], pipeline: Optional[str],
                 tokenize: bool = True) -> Iterator[Unit]:
    tokenizer: Optional[Tokenizer] = None
    for number, line in read_lines(path, encoding_errors, lone_cr=False):
        if not line.strip():
            continue
        where = f"{path}: line {number + 1}"
        try:
            record = json.loads(line)
        except ValueError as err:
            raise DumpError(f"{where}: not JSON ({err})") from None
        if not isinstance(record, dict) or not ("tokens" in record or "text" in record):
            raise DumpError(f'{where}: expected an object with "tokens" (a list of strings) or "text"')
        if "tokens" in record:
            tokens = record["tokens"]
            if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
                raise DumpError(f'{where}: "tokens" must be a list of strings')
            tokens = [_unicode(t, where, '"tokens"', encoding_errors) for t in tokens]
            text = record["text"] if isinstance(record.get("text"), str) else " ".join(tokens)
            text = _unicode(text, where, '"text"', encoding_errors)
        else:
            text = record["text"]
            if not isinstance(text, str):
                raise DumpError(f'{where}: "text" must be a string')
            text = _unicode(text, where, '"text"', encoding_errors)
            if not (lang or pipeline):
                raise DumpError(f'{where}: "text" needs a tokenizer: pass --lang LANG or --pipeline NAME_OR_PATH '
                                '(or give "tokens")')
            if not tokenize:
                continue
            if tokenizer is None:
                tokenizer = make_tokenizer(lang, pipeline)
            tokens = tokenizer(text)
        yield Unit(file, number, list(tokens), text, number, 0)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _unicode(value: str, where: str, field: str, encoding_errors: str) -> str:
    """A JSON string as Unicode text: JSON's escapes can spell a lone surrogate ("\\udc80"), which no
    UTF-8 writer (nor the tokenizer's) accepts. Strict: one DumpError naming the line; replace: U+FFFD."""
    found = _SURROGATE.search(value)
    if found is None:
        return value
    if encoding_errors == "replace":
        return _SURROGATE.sub("\ufffd", value)
    raise DumpError(
        f"{where}: {field} holds a lone surrogate (\\u{ord(found.group()):04x}), not Unicode text; fix the file, "
        "or pass --encoding-errors replace to read on (it becomes U+FFFD)"
    )


def _read_bytes(path: str) -> bytes:
    try:
        with open_input(path, "rb") as handle:
            return handle.read()
    except OSError as err:
        raise DumpError(f"{path}: cannot read the file ({err.strerror or err})") from None


def _conllu_units(path: str, file: int, encoding_errors: str = "strict") -> Iterator[Unit]:
    from ..gold_data import CorpusError, check_conllu, conllu_rows_of_text, decode_corpus

    try:
        text = decode_corpus(_read_bytes(path), path, errors=encoding_errors)
        check_conllu(text, path, check_heads=False)
    except CorpusError as err:
        raise DumpError(str(err)) from None
    sentences = conllu_rows_of_text(text)
    if not sentences:
        raise DumpError(f"{path}: no sentences (a CoNLL-U file has one token line per word)")
    for number, rows in enumerate(sentences):
        words = [row[1] for row in rows]
        yield Unit(file, number, words, " ".join(words), number, 0)


def _docbin_bytes(path: str) -> bytes:
    """A DocBin file's bytes, gunzipped where it is gzip (`d.spacy.gz`, told by its first bytes, as
    the other formats are): without this, DocBin read the compressed bytes and the error said the
    file was not a DocBin at all."""
    import gzip
    import zlib

    data = _read_bytes(path)
    if data[:2] != b"\x1f\x8b":
        return data
    try:
        return gzip.decompress(data)
    except (EOFError, OSError, zlib.error) as err:
        raise DumpError(f"{path}: not a complete gzip file ({err}); is it truncated?") from None


def _docbin_units(path: str, file: int) -> Iterator[Unit]:
    from spacy.tokens import DocBin
    from spacy.vocab import Vocab

    try:
        docbin = DocBin().from_bytes(_docbin_bytes(path))
    except (ValueError, KeyError, TypeError) as err:
        raise DumpError(f"{path}: not a spaCy DocBin (.spacy) file ({err})") from None
    number = 0
    for d, doc in enumerate(docbin.get_docs(Vocab())):
        if len(doc) and (doc.has_annotation("SENT_START") or doc.has_annotation("DEP")):
            spans = [(s.start, s.end) for s in doc.sents]
        else:
            spans = [(0, len(doc))]
        for start, end in spans:
            span = doc[start:end]
            yield Unit(file, number, [t.text for t in span], span.text, d, start)
            number += 1


def check_input(path: str, fmt: str, encoding_errors: str = "strict", lang: Optional[str] = None,
                pipeline: Optional[str] = None) -> None:
    """Read a file once as its format (without tokenizing), so that bad input fails before any work."""
    if fmt == "text":
        check_text(path, encoding_errors)
    elif fmt == "jsonl":
        for _ in _jsonl_units(path, 0, encoding_errors, lang, pipeline, tokenize=False):
            pass
    else:
        for _ in read_units(path, fmt, encoding_errors=encoding_errors):
            pass


__all__ = [
    "FORMATS", "DumpError", "Unit", "unit_key", "is_unit_key", "key_order", "open_input", "expand_inputs",
    "path_identity", "output_matcher",
    "detect_format", "shard_files", "read_lines", "check_text", "check_input", "make_tokenizer", "read_units",
]
