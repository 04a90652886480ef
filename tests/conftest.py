"""Shared test fixtures.

Reference fixtures and data come from ../shared (or SPACY_ELMO_FIXTURES /
SPACY_ELMO_DATA); tests that need them skip with the reason when absent.
"""
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _shared(env: str, sub: str) -> Path:
    if os.environ.get(env):
        return Path(os.environ[env])
    return ROOT.parent / "shared" / sub


FIXTURES = _shared("SPACY_ELMO_FIXTURES", "fixtures")
DATA = _shared("SPACY_ELMO_DATA", "data")


def require(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"needs {path} (set SPACY_ELMO_FIXTURES / SPACY_ELMO_DATA to point elsewhere)")
    return path


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return require(FIXTURES)


@pytest.fixture(scope="session")
def allennlp_dir(fixtures_dir) -> Path:
    return require(fixtures_dir / "allennlp_elmo")


@pytest.fixture(scope="session")
def bilm_tf_dir(fixtures_dir) -> Path:
    return require(fixtures_dir / "bilm_tf")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return require(DATA)


@pytest.fixture(scope="session")
def ewt_dir(data_dir) -> Path:
    return require(data_dir / "ud_en_ewt")


@pytest.fixture
def allennlp_bilm(allennlp_dir):
    from spacy_elmo.io import load_bilm

    return load_bilm(allennlp_dir)


@pytest.fixture(scope="session")
def ewt_sentences(ewt_dir):
    """The first 300 training sentences of EWT as token lists."""
    from spacy_elmo.gold_data import conllu_words

    return conllu_words(ewt_dir / "en_ewt-ud-train.conllu.gz", limit=300)


@pytest.fixture
def biLM_calls(monkeypatch):
    """How many sentences the biLM has embedded (BiLM.embed_batches, counted)."""
    from spacy_elmo.bilm.model import BiLM

    calls = {"sentences": 0}
    real = BiLM.embed_batches

    def counting(self, sentences, *args, **kwargs):
        calls["sentences"] += len(sentences)
        return real(self, sentences, *args, **kwargs)

    monkeypatch.setattr(BiLM, "embed_batches", counting)
    return calls


@pytest.fixture
def nlp_elmo(allennlp_dir):
    """A blank English pipeline with only `elmo`, on the small reference weights."""
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(allennlp_dir)})
    return nlp


def tagger_pipeline(weights, tok2vec=None, frozen=True, elmo_config=None):
    """elmo + a tagger whose tok2vec listens to it (by default an ElmoListener alone), initialized."""
    import spacy

    nlp = spacy.blank("en")
    config = {"weights": str(weights), "frozen": frozen, **(elmo_config or {})}
    nlp.add_pipe("elmo", config=config)
    tok2vec = tok2vec or {"@architectures": "spacy-elmo.ElmoListener.v1"}
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": tok2vec}})
    examples = tagged_examples(nlp)
    optimizer = nlp.initialize(lambda: examples)
    return nlp, examples, optimizer


def torchrun_command(processes: int) -> list:
    """`torchrun` with `processes` local processes on a rendezvous port the system picks (--standalone):
    a fixed --master_port failed the test with EADDRINUSE wherever anything else held that port."""
    import sys

    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(processes)]


def tagged_examples(nlp):
    from spacy.training import Example

    data = [("the cat sat on the mat", "DET NOUN VERB ADP DET NOUN"),
            ("a dog ran off", "DET NOUN VERB ADV"),
            ("birds fly south in winter", "NOUN VERB ADV ADP NOUN")]
    return [Example.from_dict(nlp.make_doc(text), {"tags": tags.split()}) for text, tags in data]


@pytest.fixture
def tiny_config_path() -> Path:
    """A biLM config that trains in seconds."""
    return ROOT / "configs" / "pretrain_tiny.cfg"


def heldout_corpus(data_dir: Path, path: Path, n_lines: int) -> Path:
    """The first `n_lines` lines of the heldout pretraining text, written to `path` (about 25 tokens a line)."""
    import gzip
    from itertools import islice

    with gzip.open(data_dir / "pretrain_en" / "heldout.txt.gz", "rt", encoding="utf-8") as f:
        path.write_text("".join(islice(f, n_lines)), encoding="utf-8")
    return path


@pytest.fixture
def small_corpus(tmp_path, data_dir) -> Path:
    """About 3,000 tokens of the heldout pretraining text."""
    return heldout_corpus(data_dir, tmp_path / "corpus.txt", 120)


@pytest.fixture
def inject(monkeypatch):
    """Set a fault in this process, counting from zero (spacy_elmo/faults.py)."""
    from spacy_elmo import faults

    def setter(spec: str) -> None:
        faults.reset()
        monkeypatch.setenv(faults.VARIABLE, spec)

    yield setter
    faults.reset()
