"""Packaging: setup.cfg holds metadata and entry points, the version lives in one place,
CI runs the README's command, and a pipeline built with `spacy package` installs and loads."""
import configparser
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from spacy_elmo.about import __version__

ROOT = Path(__file__).resolve().parent.parent


def _setup_cfg() -> configparser.ConfigParser:
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    return parser


def test_pyproject_holds_only_the_build_system():
    tables = re.findall(r"^\[([^\]]+)\]", (ROOT / "pyproject.toml").read_text(), re.M)
    assert tables == ["build-system"]


def test_the_version_is_written_in_one_place():
    from setuptools.config.setupcfg import read_configuration

    assert _setup_cfg()["metadata"]["version"] == "attr: spacy_elmo.about.__version__"
    assert read_configuration(ROOT / "setup.cfg")["metadata"]["version"] == __version__
    assert "version" not in (ROOT / "setup.py").read_text()


def test_entry_points_name_every_registered_function():
    import spacy_elmo.layers  # noqa: F401  (registers the functions)
    import spacy_elmo.pipeline  # noqa: F401
    from spacy.util import registry

    entry_points = _setup_cfg()["options.entry_points"]
    for group, reg in (("spacy_architectures", registry.architectures), ("thinc_layers", registry.layers),
                       ("thinc_model_loaders", registry.model_loaders), ("spacy_tokenizers", registry.tokenizers)):
        declared = dict(line.split(" = ") for line in entry_points[group].strip().splitlines())
        ours = {name: func for name, func in reg.get_all().items() if name.startswith("spacy-elmo.")}
        assert set(declared) == set(ours), group
        for name, target in declared.items():
            module, attr = target.split(":")
            assert getattr(__import__(module, fromlist=[attr]), attr) is ours[name], name
    assert entry_points["spacy_factories"].strip() == "elmo = spacy_elmo.pipeline.component:make_elmo"


def test_ci_runs_the_readme_test_command():
    command = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert "python -m flake8" in command and "python -m mypy" in command and command.endswith("python -m pytest")
    assert f"```bash\n{command}\n```" in (ROOT / "README.md").read_text()


def _run(args, **kwargs):
    out = subprocess.run(args, capture_output=True, text=True, timeout=1200, **kwargs)
    assert out.returncode == 0, " ".join(map(str, args)) + "\n" + out.stdout[-3000:] + out.stderr[-3000:]
    return out


@pytest.mark.slow
def test_spacy_package_installs_into_a_fresh_venv_and_loads(allennlp_dir, tmp_path):
    import spacy

    from tests.conftest import tagger_pipeline

    nlp, examples, optimizer = tagger_pipeline(allennlp_dir)
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    nlp.meta["name"] = "elmo_tagger"
    nlp.meta["version"] = "0.0.1"
    nlp.to_disk(tmp_path / "pipeline")
    (tmp_path / "packages").mkdir()
    _run([sys.executable, "-m", "spacy", "package", str(tmp_path / "pipeline"), str(tmp_path / "packages"),
          "--build", "sdist", "--force"])
    sdist = next((tmp_path / "packages").glob("*/dist/*.tar.gz"))
    # a fresh venv that sees torch, spaCy, pip and setuptools of this Python, and gets this
    # checkout and the pipeline installed into it
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", "*.so", "tests", "benchmarks", "training", "corpus"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    pip = [str(python), "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "-q"]
    _run(pip + [str(source)], env=env)
    _run(pip + [str(sdist)], env=env)
    script = (
        "import json, spacy, spacy_elmo; nlp = spacy.load('en_elmo_tagger'); doc = nlp('the cat sat on the mat');"
        "print(json.dumps({'tags': [t.tag_ for t in doc], 'shape': list(doc._.elmo.shape),"
        " 'pipeline': nlp.pipe_names, 'spacy_elmo': spacy_elmo.__file__}))"
    )
    result = json.loads(_run([str(python), "-c", script], env=env, cwd=tmp_path).stdout.strip().splitlines()[-1])
    assert result["spacy_elmo"].startswith(str(venv))  # the installed package, not this checkout
    assert result["pipeline"] == ["elmo", "tagger"] and result["shape"] == [3, 6, 32]
    assert result["tags"] == [t.tag_ for t in nlp("the cat sat on the mat")]
    assert spacy.__version__  # the venv used the same spaCy (system site packages)
