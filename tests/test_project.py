"""The spacy project on a fresh machine: `spacy project assets`, then the `smoke` workflow
(every step of `all` on tiny slices) from a copy of the repository with no ../shared beside it."""
import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
N_SENTENCES = 300  # of each file: enough for the smoke slices


def _head(path: Path, n: int) -> str:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        blocks = handle.read().strip().split("\n\n")
    return "\n\n".join(blocks[:n]) + "\n\n"


def _git_repo(path: Path, files: dict) -> str:
    """A local repository laid out as the upstream one (release files at the top, plain)."""
    path.mkdir(parents=True)
    for name, text in files.items():
        (path / name).write_text(text, encoding="utf-8")
    git = ["git", "-C", str(path), "-c", "user.name=test", "-c", "user.email=test@example.com"]
    for args in (["init", "-q", "-b", "master"], ["add", "."], ["commit", "-q", "-m", "release"]):
        subprocess.run(git + args, check=True, capture_output=True)
    return path.as_uri()


def _spacy(*args, cwd=None, timeout=1500):
    out = subprocess.run([sys.executable, "-m", "spacy", *map(str, args)], capture_output=True, text=True,
                         timeout=timeout, cwd=cwd)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    return out


def test_assets_and_smoke_workflow_without_shared(data_dir, tmp_path):
    project = tmp_path / "elsewhere" / "project"
    project.mkdir(parents=True)
    for name in ("project.yml", "configs", "scripts"):
        source = ROOT / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, project / name)
    assert not (project.parent / "shared").exists()
    splits = ("train", "dev", "test")
    ewt_files = {f"en_ewt-ud-{s}.conllu": data_dir / "ud_en_ewt" / f"en_ewt-ud-{s}.conllu.gz" for s in splits}
    uner_files = {f"en_ewt-ud-{s}.iob2": data_dir / "uner_en_ewt" / f"en_ewt-ud-{s}.iob2.gz" for s in splits[1:]}
    ewt = _git_repo(tmp_path / "repos" / "ewt", {k: _head(v, N_SENTENCES) for k, v in ewt_files.items()})
    uner = _git_repo(tmp_path / "repos" / "uner", {k: _head(v, N_SENTENCES) for k, v in uner_files.items()})
    variables = ["--vars.data_dir", "assets", "--vars.ewt_repo", ewt, "--vars.uner_repo", uner]
    _spacy("project", "assets", project, *variables, timeout=300)
    for split in splits:
        assert (project / "assets" / "ud_en_ewt" / f"en_ewt-ud-{split}.conllu").read_text().startswith("#")
    assert (project / "assets" / "uner_en_ewt" / "en_ewt-ud-test.iob2").is_file()

    _spacy("project", "run", "smoke", project, *variables)
    comparison = (project / "metrics" / "smoke-comparison.md").read_text()
    for metric in ("UPOS", "XPOS", "UAS", "LAS", "NER F1"):
        assert f"| {metric} |" in comparison
    # the baseline with the biLM's own GloVe table as static vectors, and ELMo's difference to it
    assert "| baseline + static vectors |" in comparison and "| ELMo - baseline + vectors |" in comparison
    assert "smoke-ewt_baseline_vectors" in comparison
    vectors = json.loads((project / "training" / "smoke-static_vectors" / "word_table.json").read_text())
    assert vectors["rows"] == 34983 and vectors["table"]["source"]["license"] == "PDDL-1.0"
    trained = (project / "training" / "smoke-ewt_baseline_vectors" / "model-last" / "config.cfg").read_text()
    assert "include_static_vectors = true" in trained
    # the EWT ELMo pipeline reads the biLM adapted to EWT's text (the `adapt-ewt` step)
    assert (project / "training" / "smoke-adapted_ewt" / "model-best" / "elmo.json").is_file()
    elmo_config = (project / "training" / "smoke-ewt_elmo" / "model-last" / "config.cfg").read_text()
    assert "training/smoke-adapted_ewt/model-best" in elmo_config
    elmo = json.loads((project / "metrics" / "smoke-ewt_elmo.json").read_text())
    assert set(elmo["mixes"]) == {"tagger", "morphologizer", "parser"}
    # the second stage: the same pipeline fine-tuned with its biLM unfrozen, a column of the table
    tuned = (project / "training" / "smoke-ewt_elmo_finetuned" / "model-last" / "config.cfg").read_text()
    assert "[components.elmo]" in tuned and "frozen = false" in tuned.split("[components.elmo]")[1].split("[")[0]
    assert "| ELMo fine-tuned |" in comparison and "smoke-ewt_elmo_finetuned" in comparison
    breakdown = (project / "metrics" / "smoke-upos_breakdown.md").read_text()
    assert breakdown.startswith("| group | tokens | share | baseline_vectors | elmo | elmo_finetuned |")
    assert "\n| all |" in breakdown and "| the tokenizer finds it |" in breakdown
    for name in ("smoke-dev_curves.png", "smoke-layer_weights.png"):
        assert (project / "plots" / name).stat().st_size > 5000
    # a time budget interrupts training cleanly: model-best kept, recorded, and exit 3 (unfinished: a
    # workflow must not go on with it), with a line saying --resume continues it
    budgeted = subprocess.run(
        [sys.executable, "scripts/train.py", "configs/ner_baseline.cfg", "training/budget",
         "--train", "corpus/smoke-ner-train.spacy", "--dev", "corpus/smoke-ner-dev.spacy",
         "--max-minutes", "0.25", "--training.eval_frequency", "5"],
        cwd=project, capture_output=True, text=True, timeout=600)
    assert budgeted.returncode == 3, budgeted.stdout[-4000:] + budgeted.stderr[-4000:]
    assert "--resume" in budgeted.stderr
    wall = json.loads((project / "training" / "budget" / "wall_time.json").read_text())
    assert wall["stopped"] == "time budget"  # what stopped it, not how long it took (machines differ)
    assert (project / "training" / "budget" / "model-best").is_dir()
    # --resume continues that run from model-last: its step count, log and best score go on
    budget_rows = (project / "training" / "budget" / "log.jsonl").read_text().splitlines()
    resumed = subprocess.run(
        [sys.executable, "scripts/train.py", "configs/ner_baseline.cfg", "training/budget",
         "--train", "corpus/smoke-ner-train.spacy", "--dev", "corpus/smoke-ner-dev.spacy",
         "--max-minutes", "0.1", "--resume"],
        cwd=project, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 3, resumed.stdout[-4000:] + resumed.stderr[-4000:]  # the budget again
    assert f"Resuming at step {wall['steps']}" in resumed.stdout
    again = json.loads((project / "training" / "budget" / "wall_time.json").read_text())
    assert again["stopped"] == "time budget" and again["steps"] > wall["steps"]
    rows = (project / "training" / "budget" / "log.jsonl").read_text().splitlines()
    assert rows[:len(budget_rows)] == budget_rows  # kept; the next evaluation, if the time allowed one, after
    assert "Resuming at step" in (project / "training" / "budget" / "train.log").read_text()
