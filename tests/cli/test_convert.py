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


def test_convert_table_float16_rounds_only_the_word_table(tmp_path):
    """--table-float16: the word table stored in float16 (as the shipped model's), every other
    tensor in float32; loaded back as float32 with float16's rounding."""
    import torch
    from safetensors import safe_open

    weights = write_manylangs_model(tmp_path / "zh_model")
    result = CliRunner().invoke(app, ["convert", str(weights), str(tmp_path / "half"), "--table-float16"])
    assert result.exit_code == 0, result.output
    with safe_open(str(tmp_path / "half" / "bilm.safetensors"), "pt") as f:
        dtypes = {name: f.get_tensor(name).dtype for name in f.keys()}
    assert dtypes.pop("token_encoder.word_table") == torch.float16
    assert dtypes and set(dtypes.values()) == {torch.float32}
    half, original = load_model(tmp_path / "half").bilm, load_model(weights).bilm
    torch.testing.assert_close(half.token_encoder.word_table,
                               original.token_encoder.word_table.half().float(), rtol=0, atol=0)
