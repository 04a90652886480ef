"""Regression: lowering `max_length` below the default stride (192) was an error that did not say what to do.

`{"model": {"max_length": 100}}` failed with "stride must be between 1 and
max_length (100), got 192", a setting the user never wrote. The message now
names the fix: lower stride with max_length, with a value.
"""
import pytest
import spacy


def test_lowering_max_length_names_stride_and_a_value():
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match=r"lower stride with max_length \(e\.g\. stride = 75"):
        nlp.add_pipe("elmo", config={"model": {"@architectures": "spacy-elmo.ElmoBiLM.v1", "max_length": 100}})
    nlp.add_pipe("elmo", config={"model": {"@architectures": "spacy-elmo.ElmoBiLM.v1", "max_length": 100,
                                           "stride": 75}})
