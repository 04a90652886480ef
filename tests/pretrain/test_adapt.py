"""Domain adaptation of a pretrained biLM (configs/pretrain_adapt_ewt.cfg): continue the embedded model
as a language model on a task's own text, its softmax started from the model's own word table
([paths] softmax_init naming a model) and trained alone first."""
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy
import pytest
import torch

from spacy_elmo.io import load_native
from spacy_elmo.pretrain import SettingsError, load_config, pretrain
from spacy_elmo.pretrain.word_table import write_word_table
from spacy_elmo.resources import default_model_path

ADAPT_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "pretrain_adapt_ewt.cfg"


def _tiny(tiny_config_path, **settings):
    base = {"training.max_steps": 1, "training.eval_every": 1000, "training.threads": 1}
    base.update(settings)
    return load_config(tiny_config_path, base)


def test_softmax_init_from_a_models_table_equals_init_from_that_table(tiny_config_path, small_corpus, tmp_path):
    """A native model with a frozen word table starts a softmax exactly as its table directory does."""
    counts = Counter(w.lower() for line in small_corpus.read_text().splitlines() for w in line.split())
    words = [w for w, _ in counts.most_common(200)]
    vectors = numpy.random.default_rng(5).normal(size=(len(words), 12)).astype(numpy.float32)
    write_word_table(tmp_path / "table", words, vectors, {"source": {"package": "test", "license": "CC0-1.0"}},
                     dtype="float32")
    train = str(small_corpus)
    pretrain(_tiny(tiny_config_path, **{"paths.train": train, "paths.word_table": str(tmp_path / "table")}),
             tmp_path / "with_table", progress=False)
    model_dir = tmp_path / "with_table" / "model-last"
    for name, source in (("from_dir", tmp_path / "table"), ("from_model", model_dir)):
        pretrain(_tiny(tiny_config_path, **{"paths.train": train, "paths.softmax_init": str(source)}),
                 tmp_path / name, progress=False)
    a = load_native(tmp_path / "from_dir" / "model-last").head.state_dict()
    b = load_native(tmp_path / "from_model" / "model-last").head.state_dict()
    assert set(a) == set(b)
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0)
    # a model without a table has nothing to start from
    pretrain(_tiny(tiny_config_path, **{"paths.train": train}), tmp_path / "no_table", progress=False)
    with pytest.raises(SettingsError, match="no word table"):
        pretrain(_tiny(tiny_config_path, **{"paths.train": train,
                                            "paths.softmax_init": str(tmp_path / "no_table" / "model-last")}),
                 tmp_path / "bad", progress=False)


@pytest.fixture
def task_docbin(tmp_path, ewt_sentences) -> Path:
    """40 EWT training sentences as a DocBin, the form the project's corpus step writes."""
    import spacy
    from spacy.tokens import Doc, DocBin

    vocab = spacy.blank("en").vocab
    path = tmp_path / "task.spacy"
    DocBin(docs=[Doc(vocab, words=words) for words in ewt_sentences[:40]]).to_disk(path)
    return path


def _adapt(task_docbin, output: Path, **settings) -> dict:
    overrides = {"paths.train": str(task_docbin), "paths.dev": str(task_docbin), "training.eval_every": 1000,
                 "training.checkpoint_every": 1000, "training.batch_tokens": 256}
    overrides.update(settings)
    return pretrain(load_config(ADAPT_CONFIG, overrides), output, progress=False)


def test_adapt_config_holds_the_biLM_during_the_softmax_warmup_then_trains_it(task_docbin, tmp_path):
    embedded = load_native(default_model_path()).bilm.state_dict()
    _adapt(task_docbin, tmp_path / "warm", **{"training.max_steps": 1, "training.softmax_warmup_steps": 1})
    warm = load_native(tmp_path / "warm" / "model-last")
    for name, value in warm.bilm.state_dict().items():  # the softmax alone has learned
        torch.testing.assert_close(value, embedded[name], rtol=0, atol=0, msg=name)
    assert warm.metadata["init_from"] == "embedded" and warm.head is not None
    assert set(warm.vocab.words) >= {"the", "."} and len(warm.vocab) < 1000  # the task text's words

    _adapt(task_docbin, tmp_path / "adapted", **{"training.max_steps": 2, "training.softmax_warmup_steps": 1})
    adapted = load_native(tmp_path / "adapted" / "model-last").bilm.state_dict()
    moved = [name for name, value in adapted.items() if not torch.equal(value, embedded[name])]
    assert any("lstm" in name for name in moved)
    # the table stays frozen: the baseline with its rows as static vectors is still the fair one
    torch.testing.assert_close(adapted["token_encoder.word_table"], embedded["token_encoder.word_table"],
                               rtol=0, atol=0)


def test_the_start_model_is_read_once_when_it_also_starts_the_softmax(task_docbin, tmp_path, monkeypatch):
    """init_from and softmax_init both "embedded" (the config's own settings): the softmax starts from the
    model already loaded, exactly as from a second copy read from disk."""
    from spacy_elmo.pretrain import init_from

    reads = []
    read = init_from.load_native

    def counting(path):
        reads.append(Path(path))
        return read(path)

    monkeypatch.setattr(init_from, "load_native", counting)
    _adapt(task_docbin, tmp_path / "once", **{"training.max_steps": 1, "training.softmax_warmup_steps": 1})
    assert reads == [default_model_path()]
    # another spelling of the same directory is the same model: still one read
    reads.clear()
    spelled = {"training.max_steps": 1, "training.softmax_warmup_steps": 1,
               "paths.softmax_init": str(default_model_path())}
    _adapt(task_docbin, tmp_path / "spelled", **spelled)
    assert len(reads) == 1
    # a copy elsewhere is read from disk, and starts the same softmax
    shutil.copytree(default_model_path(), tmp_path / "copy")
    reads.clear()
    copy = {"training.max_steps": 1, "training.softmax_warmup_steps": 1, "paths.softmax_init": str(tmp_path / "copy")}
    _adapt(task_docbin, tmp_path / "copied", **copy)
    assert reads == [default_model_path(), tmp_path / "copy"]
    once = load_native(tmp_path / "once" / "model-last").head.state_dict()
    copied = load_native(tmp_path / "copied" / "model-last").head.state_dict()
    for key in once:
        torch.testing.assert_close(once[key], copied[key], rtol=0, atol=0, msg=key)


SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "adapt.py"


def _script(*args: str) -> "subprocess.CompletedProcess[str]":
    command = [sys.executable, str(SCRIPT), *args, "--training.max_steps", "2", "--training.softmax_warmup_steps", "1",
               "--training.batch_tokens", "256", "--training.eval_every", "1000", "--training.checkpoint_every", "1000"]
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


def test_adapt_script_starts_from_the_shipped_or_a_pretrained_biLM(task_docbin, tiny_config_path, small_corpus,
                                                                   tmp_path):
    """The project's `adapt-ewt` step: the shipped biLM (a new softmax from its own table), or the project's
    pretrained one (with its softmax and vocabulary); a finished run is kept, not redone."""
    data = ["--train", str(task_docbin), "--dev", str(task_docbin)]
    done = _script("--elmo-model", "shipped", *data, "--output", str(tmp_path / "shipped"))
    assert done.returncode == 0, done.stderr[-3000:]
    adapted = load_native(tmp_path / "shipped" / "model-best")
    assert adapted.metadata["init_from"] == "embedded" and 'softmax_init = "embedded"' in adapted.metadata["config"]
    again = _script("--elmo-model", "shipped", *data, "--output", str(tmp_path / "shipped"))
    assert again.returncode == 0 and "has finished" in again.stdout

    pretrain(_tiny(tiny_config_path, **{"paths.train": str(small_corpus)}), tmp_path / "pretrain", progress=False)
    start = load_native(tmp_path / "pretrain" / "model-last")
    done = _script("--elmo-model", "pretrained", "--pretrained-dir", str(tmp_path / "pretrain" / "model-last"),
                   *data, "--output", str(tmp_path / "pretrained"), "--softmax.kind", "full")  # the tiny model's kind
    assert done.returncode == 0, done.stderr[-3000:]
    adapted = load_native(tmp_path / "pretrained" / "model-best")
    assert adapted.metadata["init_from"] == str(tmp_path / "pretrain" / "model-last")
    assert adapted.vocab.words == start.vocab.words  # its own softmax came along
    assert adapted.bilm.config.lstm_dim == start.bilm.config.lstm_dim

    failed = _script("--elmo-model", "shipped", "--train", str(tmp_path / "missing.spacy"), "--dev", str(task_docbin),
                     "--output", str(tmp_path / "bad"))
    assert failed.returncode != 0 and "missing.spacy" in failed.stdout + failed.stderr
