"""Text as one line: printed messages and doc pages wrap where a terminal or an editor chose, so tests
compare their words with single spaces between them."""
from pathlib import Path


def one_line(text: str) -> str:
    return " ".join(text.split())


def page(path: Path) -> str:
    """A doc page's text as one line."""
    return one_line(path.read_text(encoding="utf-8"))
