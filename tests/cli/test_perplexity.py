"""`perplexity`: a pretrained model's forward, backward and mean perplexity as JSON."""
import json
import subprocess
import sys

from spacy_elmo.pretrain import pretrain
from tests.pretrain.runs import _config


def test_perplexity_command(tiny_config_path, small_corpus, tmp_path):
    config = _config(tiny_config_path, paths__train=str(small_corpus), training__max_steps=3)
    pretrain(config, tmp_path / "r", progress=False)
    out = subprocess.run(
        [sys.executable, "-m", "spacy_elmo", "perplexity", str(tmp_path / "r" / "model-last"), str(small_corpus),
         "--json"],
        capture_output=True, text=True,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert set(result) == {"forward", "backward", "mean", "tokens"} and result["tokens"] > 1000
