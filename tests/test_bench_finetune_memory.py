"""benchmarks/bench_finetune_memory.py on a tiny pipeline: thinc's shim update leaves tensors behind,
ElmoShim's in-place one does not."""
import subprocess
import sys
from pathlib import Path

from spacy.tokens import DocBin

from tests.conftest import tagger_pipeline

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_finetune_memory.py"


def test_the_table_shows_thincs_update_keeping_tensors(allennlp_dir, tmp_path):
    nlp, examples, _ = tagger_pipeline(allennlp_dir)
    nlp.to_disk(tmp_path / "pipeline")
    DocBin(docs=[eg.reference for eg in examples] * 2).to_disk(tmp_path / "train.spacy")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "pipeline"), str(tmp_path / "train.spacy"),
         "--steps", "4", "--every", "2", "--words", "5"],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line.split(" | ") for line in done.stdout.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert [row[0] for row in rows] == ["| 0", "| 2", "| 4"]
    thinc = [int(row[2].replace(",", "")) for row in rows]
    in_place = [int(row[4].replace(",", "").rstrip(" |")) for row in rows]
    assert thinc[2] > thinc[1] > thinc[0]  # a chain link per parameter per update
    # no growth per update: the gradients appear with the first backward pass (the first update
    # sends the biLM none: the tagger's output layer starts at zero), one per parameter, and stay so
    n_parameters = sum(1 for _ in nlp.get_pipe("elmo").bilm.parameters())
    assert in_place[2] == in_place[1] and 0 <= in_place[1] - in_place[0] <= n_parameters
    assert "RSS growth after step 2" in done.stdout
