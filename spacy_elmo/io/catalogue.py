"""The catalogue of published ELMo models that can be named by a short name.

The data lives in `catalogue.json` beside this module: per model its name
(plus aliases), a title, the language, who published it, the files to fetch
(one archive, or AllenNLP's options + weights pair), the size and licence as
the publisher states them, the page that describes it, and a sha256 per file
where the publisher gives one (null otherwise: such a download is checked by
loading it, never against an invented digest).
"""
import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

CATALOGUE_PATH = Path(__file__).with_name("catalogue.json")


@dataclass(frozen=True)
class CatalogueFile:
    """One file of a catalogue model: where it is, and its sha256 where published."""

    url: str
    sha256: Optional[str] = None


@dataclass(frozen=True)
class CatalogueEntry:
    """A published model: one archive, or an options + weights pair, in `files`."""

    name: str
    title: str
    language: str
    source: str
    files: Tuple[CatalogueFile, ...]
    size: Optional[str] = None
    licence: Optional[str] = None
    page: Optional[str] = None
    aliases: Tuple[str, ...] = field(default_factory=tuple)
    notes: Optional[str] = None

    @property
    def urls(self) -> List[str]:
        return [f.url for f in self.files]


def _entry(raw: dict) -> CatalogueEntry:
    files = tuple(CatalogueFile(f["url"], f.get("sha256")) for f in raw["files"])
    return CatalogueEntry(
        name=raw["name"], title=raw["title"], language=raw["language"], source=raw["source"], files=files,
        size=raw.get("size"), licence=raw.get("licence"), page=raw.get("page"),
        aliases=tuple(raw.get("aliases") or ()), notes=raw.get("notes"),
    )


@functools.lru_cache(maxsize=None)
def catalogue() -> Dict[str, CatalogueEntry]:
    """Every catalogue model by its (lower-case) name, in the file's order.

    The same dict is returned on every call, so a test may point an entry
    elsewhere with `monkeypatch.setitem(catalogue(), name, entry)`.
    """
    raw = json.loads(CATALOGUE_PATH.read_text(encoding="utf-8"))
    entries = (_entry(item) for item in raw["models"])
    return {entry.name.lower(): entry for entry in entries}


def lookup(name: str) -> Optional[CatalogueEntry]:
    """The catalogue model called `name` or one of its aliases (any case); None if there is none."""
    key = name.strip().lower()
    models = catalogue()
    if key in models:
        return models[key]
    for entry in models.values():
        if key in (alias.lower() for alias in entry.aliases):
            return entry
    return None


def catalogue_rows() -> List[Tuple[str, str, str, str, str, str]]:
    """(name, language, title, size, licence, files) per model: what `info --list` prints."""
    rows = []
    for entry in catalogue().values():
        name = entry.name + (f" ({', '.join(entry.aliases)})" if entry.aliases else "")
        files = "options + weights" if len(entry.files) == 2 else _archive_kind(entry.urls[0])
        rows.append((name, entry.language, entry.title, entry.size or "-", entry.licence or "-", files))
    return rows


def _archive_kind(url: str) -> str:
    found = re.search(r"\.((?:tar\.)?[A-Za-z0-9]+)$", url.rsplit("/", 1)[-1])
    return found.group(1) if found else "archive"


__all__ = ["CATALOGUE_PATH", "CatalogueEntry", "CatalogueFile", "catalogue", "catalogue_rows", "lookup"]
