"""`convert` on an ELMoForManyLangs-layout model: the native format, the same bits; the published format refused."""
import numpy
from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.io import load_model

from ..io.manylangs_model import write_manylangs_model


def test_convert_turns_it_into_the_native_format(tmp_path):
    weights = write_manylangs_model(tmp_path / "zh_model")
    runner = CliRunner()
    result = runner.invoke(app, ["convert", str(weights), str(tmp_path / "native")])
    assert result.exit_code == 0, result.output
    native, original = load_model(tmp_path / "native"), load_model(weights)
    assert (tmp_path / "native" / "elmo.json").is_file() and (tmp_path / "native" / "token_vocab.json").is_file()
    sentence = [["我们", "在", "银行"]]
    numpy.testing.assert_array_equal(native.bilm.embed(sentence)[0], original.bilm.embed(sentence)[0])
    refused = runner.invoke(app, ["convert", str(weights), str(tmp_path / "pub"), "--to", "published"])
    assert refused.exit_code != 0 and "no place for a word table" in " ".join(refused.output.split())
    assert not (tmp_path / "pub").exists()
