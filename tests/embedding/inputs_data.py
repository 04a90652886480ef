"""Small inputs in every format `embed` reads, the units each should give, and a finished dump's contents."""
import json
from pathlib import Path
from typing import Dict, List

import h5py

TEXT_LINES = ["The cat sat .", "", "A second , longer line of text here", "The cat sat .", "   spaced    out   "]
# six lines (one empty, one repeated): two shards of three, or a run stopped half-way
SIX_LINES = ["The cat sat .", "", "A second , longer line of text here", "The cat sat .", "a dog ran off", "birds fly"]
JSONL_RECORDS = [{"tokens": ["Tokens", "given", "as", "is", "."]}, None, {"text": "Hello there, world."},
                 {"tokens": [], "text": "an empty unit"}]


CONLLU = (
    "# text = The cats sat.\n"
    "1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\n"
    "2\tcats\tcat\tNOUN\tNNS\t_\t3\tnsubj\t_\t_\n"
    "3\tsat\tsit\tVERB\tVBD\t_\t0\troot\t_\t_\n"
    "4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_\n"
    "\n"
    "# text = Don't go.\n"
    "1-2\tDon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "1\tDo\tdo\tAUX\tVB\t_\t3\taux\t_\t_\n"
    "2\tn't\tnot\tPART\tRB\t_\t3\tadvmod\t_\t_\n"
    "3\tgo\tgo\tVERB\tVB\t_\t0\troot\t_\t_\n"
    "4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_\n"
    "\n"
)


def write_text(path: Path, lines: List[str] = TEXT_LINES) -> Path:
    """`lines` as a text file for `embed`, one per line, at `path`."""
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_jsonl(path: Path) -> Path:
    path.write_text("".join((json.dumps(r) if r is not None else "   ") + "\n" for r in JSONL_RECORDS),
                    encoding="utf-8")
    return path


def write_conllu(path: Path) -> Path:
    path.write_text(CONLLU, encoding="utf-8")
    return path


def write_docbin(path: Path) -> Path:
    """Two docs: one with two sentences, one without boundaries."""
    from spacy.tokens import Doc, DocBin
    from spacy.vocab import Vocab

    vocab = Vocab()
    with_sents = Doc(vocab, words=["One", "sentence", ".", "And", "another", "one", "."],
                     sent_starts=[True, False, False, True, False, False, False])
    without = Doc(vocab, words=["No", "boundaries", "here"])
    DocBin(docs=[with_sents, without]).to_disk(path)
    return path


# what each file gives: (unit number, tokens, text)
EXPECTED: Dict[str, List[tuple]] = {
    "text": [(i, line.split(), line) for i, line in enumerate(TEXT_LINES)],
    "jsonl": [(0, ["Tokens", "given", "as", "is", "."], "Tokens given as is ."),
              (2, ["Hello", "there", ",", "world", "."], "Hello there, world."), (3, [], "an empty unit")],
    "conllu": [(0, ["The", "cats", "sat", "."], "The cats sat ."), (1, ["Do", "n't", "go", "."], "Do n't go .")],
    "spacy": [(0, ["One", "sentence", "."], "One sentence ."), (1, ["And", "another", "one", "."], "And another one ."),
              (2, ["No", "boundaries", "here"], "No boundaries here")],
}
WRITERS = {"text": ("in.txt", write_text), "jsonl": ("in.jsonl", write_jsonl), "conllu": ("in.conllu", write_conllu),
           "spacy": ("in.spacy", write_docbin)}


def write_all(directory: Path) -> Dict[str, Path]:
    """One file per format in `directory`; sorted by name: conllu, jsonl, spacy, txt."""
    return {fmt: writer(directory / name) for fmt, (name, writer) in WRITERS.items()}


def datasets(path):
    """{key: array} and sentence_to_index (or None) of a finished dump."""
    with h5py.File(path, "r") as f:
        arrays = {key: f[key][...] for key in f.keys() if key != "sentence_to_index"}
        mapping = json.loads(f["sentence_to_index"][0]) if "sentence_to_index" in f else None
    return arrays, mapping
