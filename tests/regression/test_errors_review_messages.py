"""Regression: error messages that named the wrong thing or gave advice that failed when followed.

An audit that triggered the raise sites a user meets most found (each test below failed on the old
code):
- scripts/train.py and finetune.py took a CoNLL-U file for --train or --dev: trained on nothing
  (tag_acc 0.0, exit 0), or blamed the config with spaCy's advice to call add_label;
- a missing --pretrained-dir or corpus was "CONFIG: cannot initialize the pipeline (...)";
- --gpu-id 0 without a usable GPU was a traceback in both scripts;
- [paths] init_from on a missing folder, or on a run folder, and the NativeLoader on one, advised a
  conversion or another loader (PublishedLoader) that failed in turn;
- a missing [paths] dev, or CoNLL-U as [paths] train, was found only after the whole training text
  was tokenized, or never (its columns became the vocabulary); a refused pretraining left an empty
  output folder.
"""
import importlib.util
import sys

import pytest

from spacy_elmo.io import WeightsError
from spacy_elmo.layers.loaders import NativeLoader
from spacy_elmo.pretrain import load_config, pretrain
from spacy_elmo.pretrain.settings import SettingsError
from tests.regression.test_train_script_exit_status_and_settings import SCRIPTS, _script

CONFIG = SCRIPTS.parent / "configs" / "ewt_elmo.cfg"


def _main(monkeypatch, name, argv):
    monkeypatch.setattr(sys, "argv", [f"{name}.py", *map(str, argv)])
    with pytest.raises(SystemExit) as exited:
        _script(name).main()
    return str(exited.value.code)


def test_the_training_scripts_name_a_corpus_they_cannot_read(monkeypatch, tmp_path):
    (tmp_path / "train.spacy").write_bytes(b"")
    (tmp_path / "dev.conllu").write_text("1\tThe\tthe\tDET\t_\t_\t0\troot\t_\t_\n", encoding="utf-8")
    said = _main(monkeypatch, "train", [CONFIG, tmp_path / "out", "--train", tmp_path / "train.spacy",
                                        "--dev", tmp_path / "dev.conllu"])
    assert said.startswith(f"--dev {tmp_path / 'dev.conllu'}: not named *.spacy") and "corpus ud" in said
    said = _main(monkeypatch, "train", [CONFIG, tmp_path / "out", "--train", tmp_path / "missing.spacy",
                                        "--dev", tmp_path / "train.spacy"])
    assert said == f"--train {tmp_path / 'missing.spacy'}: no such file or folder"
    said = _main(monkeypatch, "train", [CONFIG, tmp_path / "out", "--train", tmp_path / "train.spacy",
                                        "--dev", tmp_path / "train.spacy", "--elmo-model", "pretrained",
                                        "--pretrained-dir", tmp_path / "nothing"])
    assert said.startswith(f"--pretrained-dir {tmp_path / 'nothing'}: no such model")
    (tmp_path / "pipeline").mkdir()
    said = _main(monkeypatch, "finetune", [tmp_path / "pipeline", tmp_path / "tuned", "--train",
                                           tmp_path / "dev.conllu", "--dev", tmp_path / "train.spacy"])
    assert said.startswith(f"--train {tmp_path / 'dev.conllu'}: not named *.spacy")
    assert not (tmp_path / "out").exists() and not (tmp_path / "tuned" / "model-last").exists()


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed: the GPU may work here")
def test_a_gpu_that_cannot_be_used_is_one_line():
    from spacy_elmo.resumable_training import use_gpu_or_exit

    with pytest.raises(SystemExit) as exited:
        use_gpu_or_exit(0)
    assert str(exited.value.code).startswith("--gpu-id 0: spaCy cannot use the GPU (")
    use_gpu_or_exit(-1)  # the CPU: nothing to do


def test_init_from_and_the_native_loader_say_what_works(tmp_path, allennlp_dir, tiny_config_path):
    run = tmp_path / "run"
    pretrain(load_config(tiny_config_path, {"paths.train": str(tiny_config_path.parent.parent / "README.md"),
                                            "training.max_steps": 1, "training.threads": 1}), run, progress=False)
    cases = {tmp_path / "nothing": "no such directory",
             run: "not a model itself; its subfolder(s) model-best, model-last hold a model: pass one of them",
             allennlp_dir: f"convert it first: python -m spacy_elmo convert {allennlp_dir} OUT --to native"}
    for path, reason in cases.items():
        config = load_config(tiny_config_path, {"paths.train": "x.txt", "paths.init_from": str(path)})
        with pytest.raises(SettingsError, match="init_from") as refused:
            pretrain(config, tmp_path / "out", progress=False)
        assert reason in str(refused.value)
        with pytest.raises(WeightsError) as refused:
            NativeLoader(path).read()
        if path == allennlp_dir:  # a published model: its loader works there (so does the conversion)
            assert "use spacy-elmo.PublishedLoader.v1 (or convert it" in str(refused.value)
        else:  # a run folder or nothing: PublishedLoader would fail as well
            assert reason in str(refused.value) and "PublishedLoader" not in str(refused.value)
    assert not (tmp_path / "out").exists()  # a refused start leaves no folder behind


@pytest.mark.parametrize("setting,value,said", [
    ("paths.dev", "missing.txt", "[paths] dev: "),
    ("paths.train", "dev.conllu", "[paths] train: {dev}/dev.conllu is CoNLL-U"),
    ("paths.vocab", "missing.txt", "[paths] vocab = 'missing.txt': no such file"),
])
def test_pretraining_names_bad_text_paths_before_it_tokenizes(tmp_path, tiny_config_path, monkeypatch, setting,
                                                              value, said):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.txt").write_text("a b c\n", encoding="utf-8")
    (tmp_path / "dev.conllu").write_text("1\tThe\tthe\tDET\t_\t_\t0\troot\t_\t_\n", encoding="utf-8")
    overrides = {"paths.train": "train.txt", "training.threads": 1, setting: value}
    if setting == "paths.train":
        overrides[setting] = str(tmp_path / value)
    with pytest.raises(SettingsError) as refused:
        pretrain(load_config(tiny_config_path, overrides), tmp_path / "out", progress=False)
    assert said.format(dev=tmp_path) in str(refused.value)
    assert not (tmp_path / "out" / "corpus-cache").exists()
