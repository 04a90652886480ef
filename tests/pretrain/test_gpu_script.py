"""scripts/gpu_pretrain.py: the GPU slot's script runs here as a dry run on the CPU, and its parts join back."""
import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import torch

from spacy_elmo.io import load_model
from spacy_elmo.pretrain.text_corpus import TokenizedCorpus

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu_pretrain.py"
CONFIGS = Path(__file__).resolve().parents[2] / "configs"
sys.path.insert(0, str(SCRIPT.parent))
import gpu_pretrain  # noqa: E402


def _raw_texts(small_corpus: Path, folder: Path) -> Path:
    folder.mkdir(parents=True)
    for name in gpu_pretrain.TEXTS:
        with open(small_corpus, "rb") as src, gzip.open(folder / name, "wb") as dst:
            shutil.copyfileobj(src, dst)
    return folder


def test_the_machine_gets_no_spacy_or_thinc():
    names = [requirement.split("=")[0] for requirement in gpu_pretrain.requirements()]
    assert names == gpu_pretrain.NEEDS and not {"spacy", "thinc"} & set(names)
    assert all("==" in requirement for requirement in gpu_pretrain.requirements())  # the versions tested here


def test_text_is_tokenized_here_as_pretrain_tokenizes_it(small_corpus, tmp_path):
    raw = _raw_texts(small_corpus, tmp_path / "raw")
    gpu_pretrain.tokenize_texts(raw, tmp_path / "data", str(CONFIGS / "pretrain_gpu_2x1024_256.cfg"))
    for name, tokenized in gpu_pretrain.TEXTS.items():
        from_raw = TokenizedCorpus.prepare(raw / name, tmp_path / "cache", progress=False)
        from_tokens = TokenizedCorpus.prepare(tmp_path / "data" / tokenized, tmp_path / "cache", progress=False,
                                              tokenizer="whitespace")
        assert list(from_tokens.segments()) == list(from_raw.segments())


def test_dry_run_writes_parts_that_join_into_the_trained_model(small_corpus, tmp_path, without_spacy_env,
                                                               monkeypatch):
    work, out = tmp_path / "work", tmp_path / "out"
    gpu_pretrain.tokenize_texts(_raw_texts(small_corpus, tmp_path / "raw"), work / "data",
                                str(CONFIGS / "pretrain_tiny.cfg"))
    # the slot's side runs where spaCy and thinc cannot be imported
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "run", str(out), "--work", str(work), "--dry-run", "--dry-run-steps", "3",
         "--config", str(CONFIGS / "pretrain_tiny.cfg"), "--training.threads", "1", "--keep-dry-run"],
        capture_output=True, text=True, timeout=600, env=without_spacy_env,
    )
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    scratch = Path(done.stdout.split("dry run kept in ")[1].split()[0])
    assert sorted(p.name for p in work.iterdir()) == ["data"]  # nothing of the dry run travels
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest) == {"elmo.json", "bilm.safetensors"}  # the embedding part: no softmax
    assert (out / "log.jsonl").exists() and (out / "pretrain.log").exists()
    from_inline = subprocess.run([sys.executable, str(SCRIPT), "join", str(out), str(tmp_path / "inline")],
                                 capture_output=True, text=True)
    assert from_inline.returncode == 0, from_inline.stderr
    # parts are capped (the tiny model fits in the manifest; caps of a few bytes show the split)
    monkeypatch.setattr(gpu_pretrain, "PART_BYTES", 1000)
    monkeypatch.setattr(gpu_pretrain, "INLINE_BYTES", 100)
    small = tmp_path / "small"
    small.mkdir()
    gpu_pretrain.split(scratch / "model-embedding", small)
    assert len(json.loads((small / "manifest.json").read_text())["bilm.safetensors"]["parts"]) > 3
    assert all(p.stat().st_size <= 1000 for p in small.glob("bilm.safetensors.*"))
    joined = subprocess.run([sys.executable, str(SCRIPT), "join", str(small), str(tmp_path / "model")],
                            capture_output=True, text=True)
    assert joined.returncode == 0, joined.stderr
    trained = load_model(scratch / "run" / "model-last")
    for joined_dir in (tmp_path / "model", tmp_path / "inline"):
        model = load_model(joined_dir)
        for name, tensor in trained.bilm.state_dict().items():
            assert torch.equal(model.bilm.state_dict()[name], tensor)
    shutil.rmtree(scratch)
    # a damaged part is refused
    part = sorted(small.glob("bilm.safetensors.*"))[1]
    part.write_bytes(b"x" + part.read_bytes()[1:])
    broken = subprocess.run([sys.executable, str(SCRIPT), "join", str(small), str(tmp_path / "again")],
                            capture_output=True, text=True)
    assert broken.returncode != 0 and "sha256" in broken.stderr


def test_the_training_text_is_cut_to_fit_what_travels(tmp_path):
    text = tmp_path / "train.tok.txt.gz"
    lines = [f"sentence {i} with some words {i * 7919 % 1000} in it\n" for i in range(20000)]
    with gzip.open(text, "wt", encoding="utf-8") as handle:
        handle.writelines(lines)
    budget = text.stat().st_size // 3
    kept = gpu_pretrain.fit_text(text, budget)
    assert text.stat().st_size <= budget and 0 < kept < len(lines)
    with gzip.open(text, "rt", encoding="utf-8") as handle:
        assert handle.readlines() == lines[:kept]  # the first lines, whole
    assert gpu_pretrain.fit_text(text, budget) == kept  # already fits: unchanged


def test_a_local_runs_leftovers_do_not_go_to_the_device(tmp_path):
    work = tmp_path / "work"
    (work / "run").mkdir(parents=True)
    done = subprocess.run([sys.executable, str(SCRIPT), "run", str(tmp_path / "out"), "--work", str(work)],
                          capture_output=True, text=True)
    assert done.returncode != 0 and "from a local run" in done.stderr
