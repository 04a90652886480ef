"""What every command shares (spacy_elmo/cli/_util.py): huge pages asked for unless the user chose, and
weights read through the loaders' resolution."""
import json
import os

from spacy_elmo.cli import app
from spacy_elmo.io import load_bilm

from .invoke import runner


def test_commands_ask_for_huge_pages_unless_the_user_chose(monkeypatch, tmp_path):
    from spacy_elmo.cli._util import HUGE_PAGES_VARIABLE

    text = tmp_path / "in.txt"
    text.write_text("x\n")
    monkeypatch.delenv(HUGE_PAGES_VARIABLE, raising=False)
    # fails; the setting stays
    runner.invoke(app, ["embed", str(text), str(tmp_path / "o.h5"), "--weights", str(tmp_path)])
    assert os.environ[HUGE_PAGES_VARIABLE] == "1"
    monkeypatch.setenv(HUGE_PAGES_VARIABLE, "0")
    result = runner.invoke(app, ["info", "--json"])
    assert result.exit_code == 0 and os.environ[HUGE_PAGES_VARIABLE] == "0"
    assert json.loads(result.output)["cpu_inference"]["huge_page_tensors"] is False


def test_the_commands_read_through_the_same_resolution(allennlp_dir, monkeypatch):
    from typer.testing import CliRunner

    from spacy_elmo.cli import app
    from spacy_elmo.cli._util import load_weights_or_fail
    from spacy_elmo.layers import loaders

    asked = []
    real = loaders.resolve_loader

    def recording(weights=None):
        asked.append(weights)
        return real(weights)

    monkeypatch.setattr(loaders, "resolve_loader", recording)
    result = CliRunner().invoke(app, ["info", str(allennlp_dir), "--json"])
    assert result.exit_code == 0, result.output
    assert asked == [str(allennlp_dir)]
    assert load_weights_or_fail(None).bilm.width == load_bilm().width and asked[-1] is None
