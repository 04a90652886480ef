"""Regression: `[training.distill] max_wordpieces = 2` was accepted, though the teacher's two special
wordpieces ([CLS] and [SEP]) fill two positions and leave none for a word: every token was left out
of the distillation loss and the teacher ran for nothing. 3 is now the least, refused in one line.

Found beside it: an invalid setting of a subsection was reported as the whole section's dict
(`[training] distill = {'max_wordpieces': 2, 'teacher': None, ...}: Input should be ...`), without
the setting's name or its reason; it is now named as the config file names it."""
import pytest

from spacy_elmo.pretrain import load_config
from spacy_elmo.pretrain.settings import SettingsError


def test_two_wordpieces_are_refused_three_accepted(tiny_config_path):
    with pytest.raises(SettingsError, match=r"^\[training\.distill\] max_wordpieces = 2: .*3 \(the teacher's two "
                                            r"special wordpieces and a word's\)$"):
        load_config(tiny_config_path, {"training.distill.max_wordpieces": 2})
    assert load_config(tiny_config_path, {"training.distill.max_wordpieces": 3})["training"]["distill"][
        "max_wordpieces"] == 3


def test_a_subsection_setting_is_named_with_its_choices(tiny_config_path):
    with pytest.raises(SettingsError, match=r"^\[training\.distill\] layer = 'x'; choose one of \('top', 'mix', "
                                            r"'token'\)$"):
        load_config(tiny_config_path, {"training.distill.layer": "x"})
