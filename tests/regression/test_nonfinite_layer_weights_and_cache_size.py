"""Regression: `embed --layer-weights nan,0,0` (or inf, or 1e39, inf in float32) embedded a whole corpus
into an all-NaN or all-inf file marked complete and exited 0, its run record holding a NaN that is not
JSON; and `token_cache_size = -1` passed `add_pipe`, then failed at the first doc with a bare
"max_size must be >= 0" that named no setting. Both are refused where they are given, in one line."""
import pytest
import spacy

from spacy_elmo.cli import app
from tests.cli.invoke import flat, runner


@pytest.mark.parametrize("weights", ["nan,0,0", "0,inf,0", "1e39,0,0"])
def test_embed_refuses_layer_weights_that_are_not_finite(tmp_path, weights):
    text = tmp_path / "in.txt"
    text.write_text("Hello world .\n")
    output = tmp_path / "out.h5"
    result = runner.invoke(app, ["embed", str(text), str(output), "-q", "--layers", "weighted",
                                 "--layer-weights", weights])
    assert result.exit_code == 1, result.output
    assert "--layer-weights must be finite numbers" in flat(result) and not output.exists()


def test_a_negative_token_cache_size_is_refused_when_the_model_is_built():
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match="token_cache_size must be >= 0 .*got -1"):
        nlp.add_pipe("elmo", config={"model": {"token_cache_size": -1}})
