"""A word table directory: the pretrained word vectors a biLM's token layer ships with.

`scripts/build_word_table.py` writes one from a registry package of vectors;
`pretrain` reads it (`[paths] word_table`). The directory holds

    vectors.npy   (rows, dim) float16 or float32: row i is the vector of line i of words.txt
    words.txt     one word per line, in row order (UTF-8)
    table.json    where the vectors come from (package, version, licence), how they were
                  pruned, the sizes and the sha256 of both files

table.json is written last, so a directory that has one is complete; the
checksums catch a file changed or swapped afterwards. The table's own
learned rows (sentence boundaries, unknown words: `TABLE_SPECIALS`) are not
in it: the biLM learns them. No spaCy or thinc here.
"""
import json
from pathlib import Path
from typing import Any, Collection, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy
import torch

from ..bilm.errors import SpacyElmoError
from ..bilm.vocab import TABLE_SPECIALS, WordTableVocabulary
from ..io.atomic import atomic_path
from ..io.checksum import sha256_file

PathLike = Union[str, Path]

VECTORS_FILE = "vectors.npy"
WORDS_FILE = "words.txt"
INFO_FILE = "table.json"
FORMAT_NAME = "spacy-elmo-word-table"
FORMAT_VERSION = 1
TABLE_DTYPES = ("float16", "float32")


class WordTableError(SpacyElmoError, ValueError):
    """A word table directory is missing a file, or its files do not agree."""


def usable_word(word: Optional[str]) -> bool:
    """Whether a vector file's word can be a row: one non-empty line of words.txt, one
    field of a word2vec text file, and not the name of a learned row."""
    if not word:
        return False
    return not any(char.isspace() for char in word) and word not in TABLE_SPECIALS


def select_rows(
    vector_words: Sequence[str], text_counts: Mapping[str, int], top_text: int, top_vectors: int,
    skip_rows: Collection[int] = (),
) -> List[int]:
    """Rows of the vector file to keep, in the file's order: the `top_text` most frequent
    words of the text (`text_counts`, keyed as the table looks words up) that the file
    has, and the file's first `top_vectors` words (a file ordered by frequency: words the
    text lacks but downstream text will have). Unusable words (`usable_word`) are skipped,
    and so are `skip_rows` (rows the file holds NaN or infinity in: `non_finite_rows`)."""
    if top_text < 0 or top_vectors < 0:
        raise ValueError(f"top_text and top_vectors must be >= 0, got {top_text}, {top_vectors}")
    skip = set(skip_rows)
    index: Dict[str, int] = {}
    for row, word in enumerate(vector_words):
        if usable_word(word) and row not in skip:
            index.setdefault(word, row)
    keep = set(row for row in index.values() if row < top_vectors)
    ranked = sorted((-count, word) for word, count in text_counts.items() if word in index)
    keep.update(index[word] for _, word in ranked[:top_text])
    return sorted(keep)


def non_finite_rows(vectors: numpy.ndarray, chunk: int = 65536) -> List[int]:
    """The rows of a vector file (a memory-mapped array, read a chunk at a time) that hold NaN or
    infinity: no table can keep them."""
    rows: List[int] = []
    for start in range(0, vectors.shape[0], chunk):
        finite = numpy.isfinite(numpy.asarray(vectors[start:start + chunk])).all(axis=1)
        rows.extend(int(start + i) for i in numpy.flatnonzero(~finite))
    return rows


def check_word_table(
    words: Sequence[str], vectors: numpy.ndarray, dtype: str = "float16", lowercase: bool = True
) -> numpy.ndarray:
    """The table's array in `dtype`, or a ValueError saying why these words and vectors cannot be one
    (see `write_word_table`): checked before anything is written, so a refused table leaves the
    one already on disk whole."""
    if dtype not in TABLE_DTYPES:
        raise ValueError(f"dtype must be one of {TABLE_DTYPES}, got {dtype!r}")
    if vectors.ndim != 2 or vectors.shape[0] != len(words):
        raise ValueError(f"{len(words)} words need a (rows, dim) array of {len(words)} rows, got {vectors.shape}")
    bad = [w for w in words if not usable_word(w)]
    if bad:
        raise ValueError(f"words that cannot be rows (empty, whitespace, or a learned row's name): {bad[:5]}")
    if lowercase:
        cased = [w for w in words if w != w.lower()]
        if cased:
            raise ValueError(
                f"{len(cased)} word(s) with upper-case letters in a lower-cased table, e.g. {cased[0]!r}: "
                "lowercase=True looks every token up lower-cased, so their rows could never be read; lower-case "
                "the words first (keeping one row of those that lower-case alike), or write a cased table "
                "(lowercase=False)"
            )
    WordTableVocabulary(list(words), lowercase=lowercase)  # duplicates are an error here, not at load time
    with numpy.errstate(over="ignore", invalid="ignore"):  # values beyond float16's range: reported just below
        array = numpy.ascontiguousarray(vectors, dtype=numpy.dtype(dtype))
    finite = numpy.isfinite(array).all(axis=1)
    if not finite.all():
        broken = ~numpy.isfinite(numpy.asarray(vectors, dtype=numpy.float64)).all(axis=1)
        problems = []
        for rows, why in ((broken, "hold NaN or infinity in the vectors (leave those words out)"),
                          (~finite & ~broken, f"have values beyond {dtype}'s range (write the table as float32)")):
            if rows.any():
                named = ", ".join(repr(words[i]) for i in numpy.flatnonzero(rows)[:5])
                problems.append(f"{int(rows.sum())} row(s), e.g. {named}, {why}")
        raise ValueError(f"{int((~finite).sum())} row(s) not finite in {dtype}: " + "; ".join(problems))
    return array


def write_word_table(
    directory: PathLike,
    words: Sequence[str],
    vectors: numpy.ndarray,
    info: Optional[Mapping[str, Any]] = None,
    dtype: str = "float16",
    lowercase: bool = True,
) -> Dict[str, Any]:
    """Write the three files (each atomically, table.json last) and return table.json's contents.

    `info`: what to record beside the sizes and checksums (source, licence, pruning).
    `lowercase`: the vectors are keyed by lower-cased words (GloVe 6B), so the biLM
    looks tokens up lower-cased; a word with an upper-case letter could then never be
    looked up (and "Apple" beside "apple" would be two rows for one key), so it is
    refused: lower-case them first (`select_rows` on the lower-cased words keeps the
    first row of those that lower-case alike, as scripts/build_word_table.py does).
    """
    words = list(words)
    array = check_word_table(words, vectors, dtype, lowercase)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / INFO_FILE).unlink(missing_ok=True)  # the directory is incomplete until it is rewritten
    with atomic_path(directory / VECTORS_FILE) as tmp:
        with open(tmp, "wb") as handle:
            numpy.save(handle, array, allow_pickle=False)
    with atomic_path(directory / WORDS_FILE) as tmp:
        tmp.write_text("".join(word + "\n" for word in words), encoding="utf-8")
    table = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        **dict(info or {}),
        "rows": len(words),
        "dim": int(array.shape[1]),
        "dtype": dtype,
        "lowercase": lowercase,
        "specials": list(TABLE_SPECIALS),
        "sha256": {name: sha256_file(directory / name) for name in (VECTORS_FILE, WORDS_FILE)},
    }
    with atomic_path(directory / INFO_FILE) as tmp:
        tmp.write_text(json.dumps(table, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return table


def read_table_info(directory: PathLike) -> Dict[str, Any]:
    """table.json of a word table directory (WordTableError if absent or not one)."""
    directory = Path(directory)
    path = directory / INFO_FILE
    if not directory.is_dir():
        raise WordTableError(f"{directory}: not a directory (a word table is a directory with {INFO_FILE})")
    if not path.is_file():
        raise WordTableError(
            f"{path}: missing; {directory} is not a (complete) word table; build one with scripts/build_word_table.py"
        )
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise WordTableError(f"{path}: not readable JSON ({err})") from None
    if not isinstance(info, dict) or info.get("format") != FORMAT_NAME:
        raise WordTableError(f"{path}: not a spacy-elmo word table (format {FORMAT_NAME!r} expected)")
    if info.get("format_version") != FORMAT_VERSION:
        raise WordTableError(
            f"{path}: format_version {info.get('format_version')!r}; this version reads {FORMAT_VERSION}"
        )
    return info


def load_word_table(directory: PathLike) -> Tuple[WordTableVocabulary, torch.Tensor]:
    """The table's vocabulary (its words, then the learned rows `TABLE_SPECIALS`) and its
    vectors as a float32 (rows, dim) tensor, for `BiLM(..., word_table_vocab=)` and
    `BiLM.set_word_table`. Every file is checked against table.json (WordTableError)."""
    directory = Path(directory)
    info = read_table_info(directory)
    checksums = info.get("sha256") or {}
    for name in (VECTORS_FILE, WORDS_FILE):
        path = directory / name
        if not path.is_file():
            raise WordTableError(f"{path}: missing (listed in {directory / INFO_FILE})")
        expected = checksums.get(name)
        if expected is not None and sha256_file(path) != expected:
            raise WordTableError(f"{path}: checksum mismatch with {INFO_FILE} (changed or replaced since it was built)")
    try:
        array = numpy.load(directory / VECTORS_FILE, allow_pickle=False)
    except (OSError, ValueError) as err:
        raise WordTableError(f"{directory / VECTORS_FILE}: not a readable .npy array ({err})") from None
    try:
        words = (directory / WORDS_FILE).read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as err:
        raise WordTableError(f"{directory / WORDS_FILE}: not a readable UTF-8 word list ({err})") from None
    if words and words[-1] == "":
        words.pop()
    rows, dim = info.get("rows"), info.get("dim")
    if array.ndim != 2 or array.dtype.kind != "f":
        raise WordTableError(
            f"{directory / VECTORS_FILE}: a 2-d float array expected, got {array.ndim}-d {array.dtype}"
        )
    if (array.shape[0], array.shape[1]) != (rows, dim) or len(words) != rows:
        raise WordTableError(
            f"{directory}: sizes disagree: {INFO_FILE} says {rows} rows of {dim}, {VECTORS_FILE} has shape "
            f"{tuple(array.shape)}, {WORDS_FILE} has {len(words)} words"
        )
    if not numpy.isfinite(array).all():
        raise WordTableError(f"{directory / VECTORS_FILE}: not all values are finite")
    try:
        vocab = WordTableVocabulary(words, specials=list(info.get("specials", TABLE_SPECIALS)),
                                    lowercase=bool(info.get("lowercase", False)))
    except ValueError as err:
        raise WordTableError(f"{directory / WORDS_FILE}: {err}") from None
    return vocab, torch.from_numpy(array.astype(numpy.float32))


def write_word2vec_text(path: PathLike, words: Sequence[str], vectors: numpy.ndarray) -> None:
    """The table as a word2vec text file ("ROWS DIM" line, then "word v1 ... vDIM" per row),
    what `spacy init vectors LANG FILE OUTPUT_DIR` reads. Values are written as the
    shortest text that reads back to the same float32."""
    array = numpy.asarray(vectors, dtype=numpy.float32)
    text = numpy.vectorize(lambda x: numpy.format_float_positional(x, unique=True, trim="-"), otypes=[object])
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(f"{array.shape[0]} {array.shape[1]}\n")
            for word, row in zip(words, array):
                handle.write(word + " " + " ".join(text(row)) + "\n")


def write_spacy_vectors(directory: PathLike, words: Sequence[str], vectors: numpy.ndarray, lang: str,
                        lowercase: bool) -> int:
    """A blank `lang` pipeline whose vectors are the table's rows; with `lowercase`, each row is
    also the vector of the word's Title- and UPPER-case forms (spaCy 3.8 does not save a
    vectors table's `attr = LOWER` lookup). For `--paths.vectors` with a CNN tok2vec's
    `include_static_vectors`. Returns the number of keys."""
    import spacy
    from spacy.vectors import Vectors

    nlp = spacy.blank(lang)
    strings = nlp.vocab.strings
    table = Vectors(strings=strings, data=numpy.ascontiguousarray(vectors, dtype=numpy.float32))
    words = list(words)
    for forms in ([words] + ([[w.title() for w in words], [w.upper() for w in words]] if lowercase else [])):
        for row, form in enumerate(forms):
            key = strings.add(form)
            if key not in table:  # a word's own row wins over another word's cased form
                table.add(key, row=row)
    nlp.vocab.vectors = table
    nlp.meta["name"] = "word_table_vectors"
    Path(directory).parent.mkdir(parents=True, exist_ok=True)  # spaCy's to_disk makes the folder, not its parents
    nlp.to_disk(directory)
    return table.n_keys


__all__ = [
    "FORMAT_NAME", "INFO_FILE", "VECTORS_FILE", "WORDS_FILE", "WordTableError", "check_word_table", "load_word_table",
    "non_finite_rows", "read_table_info", "select_rows", "usable_word", "write_spacy_vectors", "write_word2vec_text",
    "write_word_table",
]
