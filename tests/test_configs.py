"""Every spaCy config in configs/ passes `spacy debug config`; the README's snippet fills."""
import re
from pathlib import Path

import pytest
import spacy
from spacy.cli.debug_config import debug_config
from spacy.cli.init_config import fill_config
from thinc.api import Config

ROOT = Path(__file__).resolve().parent.parent
PIPELINE_CONFIGS = sorted(p for p in (ROOT / "configs").glob("*.cfg") if not p.name.startswith("pretrain_"))
PATHS = {"paths.train": "corpus/train.spacy", "paths.dev": "corpus/dev.spacy"}


def test_the_pretraining_configs_are_the_only_other_kind():
    """configs/pretrain_*.cfg configure `spacy_elmo pretrain` (no [nlp]); all others are spaCy's."""
    for path in (ROOT / "configs").glob("*.cfg"):
        has_nlp = "nlp" in Config().from_disk(path, interpolate=False)
        assert has_nlp != path.name.startswith("pretrain_"), path.name


@pytest.mark.parametrize("path", PIPELINE_CONFIGS, ids=lambda p: p.name)
def test_config_passes_spacy_debug_config(path):
    debug_config(path, overrides=PATHS)  # exits (SystemExit) on an invalid config


def test_readme_config_snippet_is_complete(tmp_path):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    snippet = re.search(r"## Using it in a training config.*?```ini\n(.*?)```", readme, re.S).group(1)
    (tmp_path / "snippet.cfg").write_text(snippet, encoding="utf-8")
    fill_config(tmp_path / "filled.cfg", tmp_path / "snippet.cfg", silent=True)
    debug_config(tmp_path / "filled.cfg", overrides=PATHS)
    config = Config().from_disk(tmp_path / "filled.cfg")
    nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=True)
    assert nlp.pipe_names == ["elmo", "tagger"]
    assert config["initialize"]["components"]["elmo"]["loader"]["@model_loaders"] == "spacy-elmo.EmbeddedLoader.v1"
