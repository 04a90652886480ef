"""Running the commands in tests: typer's runner, the output unwrapped, and a refusal checked."""
from typer.testing import CliRunner

from spacy_elmo.cli import app

from ..text import one_line

runner = CliRunner()
ELF_HEADER = b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00>\x00"


def refused(args, *expected):
    """The command fails cleanly, and its one message says each of `expected`."""
    result = runner.invoke(app, [str(a) for a in args])
    text = one_line(result.output)
    assert result.exit_code == 1, text
    assert isinstance(result.exception, SystemExit), result.exception  # typer.Exit, not a crash
    assert "Traceback" not in result.output
    for part in expected:
        assert part in text, (part, text)
    return text


def flat(result) -> str:
    """The output with wasabi's line wrapping undone."""
    return one_line(result.output)
