"""Regression: `embed`'s readers let malformed or unusual input through, or stopped with a traceback.

- a CoNLL-U file that was not CoNLL-U (plain text, space-separated columns)
  gave an empty dump and exit 0, and `1` alone on a line raised IndexError;
- `--encoding-errors replace` did not reach the CoNLL-U reader;
- a JSONL string spelling a lone surrogate (`"\\udc80"`) failed inside the
  tokenizer (or the writer) with a traceback, partway through the run;
- a UTF-8 byte-order mark became part of the first token;
- a `.txt.gz` / `.jsonl.gz` input was read as its compressed bytes;
- NUL bytes stayed in the text under `--encoding-errors replace`, though the
  error had said invalid input becomes U+FFFD;
- a CoNLL-U form holding U+2028 or a form feed split its line (`str.splitlines`).
"""
import gzip
import json

import pytest

from spacy_elmo.embedding import inputs
from spacy_elmo.embedding.inputs import DumpError

CONLLU = "# text = The bank\n1\tThe\t_\t_\t_\t_\t_\t_\t_\t_\n2\tbank\t_\t_\t_\t_\t_\t_\t_\t_\n\n"


def _tokens(path, fmt, **kwargs):
    inputs.check_input(str(path), fmt, **kwargs)
    return [unit.tokens for unit in inputs.read_units(str(path), fmt, **kwargs)]


@pytest.mark.parametrize("text,message", [
    ("The bank of the river\n", "expected 10 tab-separated columns"),
    ("1 The _ _ _ _ _ _ _ _\n\n", "expected 10 tab-separated columns"),
    ("1\n\n", "expected 10 tab-separated columns"),
    ("# only a comment\n\n", "no sentences"),
    ("x\tThe\t_\t_\t_\t_\t_\t_\t_\t_\n\n", "is not a CoNLL-U token ID"),
])
def test_a_file_that_is_not_conllu_is_one_error(tmp_path, text, message):
    path = tmp_path / "in.conllu"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DumpError, match=message):
        _tokens(path, "conllu")


def test_conllu_reads_unparsed_heads_and_honours_replace(tmp_path):
    path = tmp_path / "in.conllu"
    path.write_bytes(CONLLU.replace("bank", "b\xffnk").encode("latin-1"))
    with pytest.raises(DumpError, match="not valid UTF-8"):
        _tokens(path, "conllu")
    assert _tokens(path, "conllu", encoding_errors="replace") == [["The", "b\ufffdnk"]]


@pytest.mark.parametrize("record", [{"text": "x \udc80 y"}, {"tokens": ["a\ud800b"]}])
def test_a_lone_surrogate_in_jsonl_is_one_error_or_replaced(tmp_path, record):
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="ascii")
    with pytest.raises(DumpError, match=r"line 1: .* holds a lone surrogate \(\\ud[8c][08]0\)"):
        _tokens(path, "jsonl", lang="en")
    (tokens,) = _tokens(path, "jsonl", lang="en", encoding_errors="replace")
    assert any("\ufffd" in t for t in tokens)
    assert all(t.encode("utf-8") for t in tokens)  # no surrogate left


@pytest.mark.parametrize("fmt,name,line", [
    ("text", "in.txt", "The bank\n"),
    ("jsonl", "in.jsonl", json.dumps({"tokens": ["The", "bank"]}) + "\n"),
    ("conllu", "in.conllu", CONLLU),
])
def test_a_byte_order_mark_is_not_part_of_the_first_token(tmp_path, fmt, name, line):
    path = tmp_path / name
    path.write_bytes(b"\xef\xbb\xbf" + line.encode("utf-8"))
    assert _tokens(path, fmt) == [["The", "bank"]]


@pytest.mark.parametrize("fmt,name,line", [
    ("text", "in.txt.gz", "The bank\n"),
    ("jsonl", "in.jsonl.gz", json.dumps({"tokens": ["The", "bank"]}) + "\n"),
])
def test_gzip_inputs_are_read_decompressed(tmp_path, fmt, name, line):
    path = tmp_path / name
    path.write_bytes(gzip.compress(line.encode("utf-8")))
    assert inputs.detect_format(str(path)) == fmt
    assert _tokens(path, fmt) == [["The", "bank"]]
    path.write_bytes(gzip.compress((line * 2000).encode("utf-8"))[:-40])  # cut short
    with pytest.raises(DumpError, match="not a complete gzip file"):
        _tokens(path, fmt)


def test_nul_bytes_become_the_replacement_character(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(b"The b\x00nk\n")
    with pytest.raises(DumpError, match="NUL byte"):
        _tokens(path, "text")
    assert _tokens(path, "text", encoding_errors="replace") == [["The", "b\ufffdnk"]]


def test_a_form_with_a_unicode_line_separator_is_one_token(tmp_path):
    path = tmp_path / "in.conllu"
    path.write_text(CONLLU.replace("bank", "ba\u2028nk\x0c"), encoding="utf-8")
    assert _tokens(path, "conllu") == [["The", "ba\u2028nk\x0c"]]


class _Streamed:
    """A file that can only be read forward, as fsspec's streamed HTTP files are (no seek, no peek)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.closed = data, False

    def read(self, size: int = -1) -> bytes:
        size = len(self.data) if size < 0 else size
        chunk, self.data = self.data[:size], self.data[size:]
        return chunk

    def seek(self, *args):
        raise ValueError("Cannot seek streaming HTTP file")

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize("data", [b"The bank\n", gzip.compress(b"The bank\n")])
def test_a_file_that_cannot_seek_is_read(monkeypatch, data):
    monkeypatch.setattr(inputs, "open_input", lambda path, mode="rb": _Streamed(data))
    assert [line for _, line in inputs.read_lines("https://example.invalid/in.txt")] == ["The bank"]
