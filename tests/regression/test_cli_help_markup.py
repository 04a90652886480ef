"""Regression: `pretrain --help` printed "Text is split by spaCy's tokenizer ( tokenizer = "spacy",
the default)": typer renders help texts as rich markup, which took `[corpus]` for a style tag and
dropped it. Every command's help text (docstring, arguments, options) must read the same rendered."""
import pytest

from spacy_elmo.cli import app
from tests.cli.invoke import flat, runner

rich_markup = pytest.importorskip("rich.markup")


def _help_texts():
    import typer.main

    group = typer.main.get_command(app)
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        yield name, "help", command.help or ""
        for param in command.params:
            yield name, param.name, getattr(param, "help", None) or ""


@pytest.mark.parametrize("command,where,text", list(_help_texts()))
def test_help_text_has_no_markup_that_rich_would_eat(command, where, text):
    assert rich_markup.render(text).plain == text, (command, where)


def test_pretrain_help_shows_the_corpus_tokenizer_setting():
    result = runner.invoke(app, ["pretrain", "--help"], terminal_width=200)
    assert result.exit_code == 0
    assert 'corpus.tokenizer = "spacy", the default' in flat(result)
