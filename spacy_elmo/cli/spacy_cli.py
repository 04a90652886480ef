"""Registers the command group under spaCy's own CLI: `spacy elmo COMMAND`.

spaCy imports this module through the `spacy_cli` entry point before it
builds its command line.
"""
from spacy.cli._util import app as spacy_app

from . import app as elmo_app

spacy_app.add_typer(elmo_app, name="elmo")
elmo_cli = elmo_app

__all__ = ["elmo_cli"]
