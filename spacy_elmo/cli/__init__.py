"""Command line: `python -m spacy_elmo COMMAND`, `spacy-elmo COMMAND` or `spacy elmo COMMAND`.

Commands: pretrain, perplexity, embed, convert, info, download, corpus, evaluate.
"""
import typer

from ._util import prefer_huge_pages
from .convert import convert_cli
from .corpus import corpus_cli
from .download import download_cli
from .embed import embed_cli
from .evaluate import evaluate_cli
from .info import info_cli
from .perplexity import perplexity_cli
from .pretrain import pretrain_cli

HELP = """ELMo for spaCy: pretrain a biLM, embed text, convert and inspect weights."""

app = typer.Typer(name="elmo", help=HELP, no_args_is_help=True, add_completion=False)


@app.callback()
def _before_every_command() -> None:
    """Process settings every command wants, applied before it loads a model."""
    prefer_huge_pages()


_EXTRA_ARGS = {"allow_extra_args": True, "ignore_unknown_options": True}
app.command("pretrain", context_settings=_EXTRA_ARGS)(pretrain_cli)
app.command("perplexity")(perplexity_cli)
app.command("embed")(embed_cli)
app.command("convert")(convert_cli)
app.command("info")(info_cli)
app.command("download")(download_cli)
app.command("corpus")(corpus_cli)
app.command("evaluate")(evaluate_cli)


def main() -> None:
    """The `spacy-elmo` console script."""
    app(prog_name="spacy-elmo")


__all__ = ["app", "main"]
