"""scripts/gpu_pretrain.py: the GPU slot's script runs here as a dry run on the CPU, and its parts join back."""
import json
import subprocess
import sys
from pathlib import Path

import torch

from spacy_elmo.io import load_model

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu_pretrain.py"
CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_dry_run_writes_parts_that_join_into_the_trained_model(small_corpus, tmp_path):
    import gzip
    import shutil

    work, out = tmp_path / "work", tmp_path / "out"
    (work / "data").mkdir(parents=True)
    for name in ("train.txt.gz", "heldout.txt.gz"):
        with open(small_corpus, "rb") as src, gzip.open(work / "data" / name, "wb") as dst:
            shutil.copyfileobj(src, dst)
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "run", str(out), "--work", str(work), "--dry-run", "--dry-run-steps", "3",
         "--config", str(CONFIGS / "pretrain_tiny.cfg"), "--training.threads", "1"],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest) == {"elmo.json", "bilm.safetensors"}  # the embedding part: no softmax
    assert (out / "log.jsonl").exists()
    # parts are capped (the tiny model fits in one; a cap of a few bytes shows the split)
    sys.path.insert(0, str(SCRIPT.parent))
    import gpu_pretrain

    gpu_pretrain.PART_BYTES = 1000
    small = tmp_path / "small"
    small.mkdir()
    gpu_pretrain.split(work / "model-embedding", small)
    assert len(json.loads((small / "manifest.json").read_text())["bilm.safetensors"]["parts"]) > 3
    assert all(p.stat().st_size <= 1000 for p in small.glob("bilm.safetensors.*"))
    joined = subprocess.run([sys.executable, str(SCRIPT), "join", str(small), str(tmp_path / "model")],
                            capture_output=True, text=True)
    assert joined.returncode == 0, joined.stderr
    trained = load_model(work / "run" / "model-last")
    model = load_model(tmp_path / "model")
    for name, tensor in trained.bilm.state_dict().items():
        assert torch.equal(model.bilm.state_dict()[name], tensor)
    # a damaged part is refused
    part = sorted(small.glob("bilm.safetensors.*"))[1]
    part.write_bytes(b"x" + part.read_bytes()[1:])
    broken = subprocess.run([sys.executable, str(SCRIPT), "join", str(small), str(tmp_path / "again")],
                            capture_output=True, text=True)
    assert broken.returncode != 0 and "sha256" in broken.stderr
