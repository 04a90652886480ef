"""Regression: `weights = ""` quietly meant the working directory.

The component took an empty string as a path, Path("") is ".", and the first
doc failed with ".: no options file (options.json) found". An empty (or
blank) setting is now refused when the component is created.
"""
import pytest
import spacy


@pytest.mark.parametrize("weights", ["", "  "])
def test_an_empty_weights_setting_is_refused(weights):
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match="empty string names no model"):
        nlp.add_pipe("elmo", config={"weights": weights})
