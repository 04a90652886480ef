"""Regression: a language spaCy lacks, or whose tokenizer needs a package that is not installed,
was a traceback of 140-180 lines from `pretrain --corpus.lang`, from `perplexity --lang ja` (after
the model had loaded: only `get_lang_class` was checked, which succeeds for ja, ko and vi without
their packages) and from `scripts/build_word_table.py --lang`. Now one line each, before any work.
"""
import pytest
import spacy

from spacy_elmo.cli._util import spacy_lang_problem
from spacy_elmo.pretrain import text_corpus
from tests.cli.invoke import refused
from tests.regression.test_train_script_exit_status_and_settings import _script, _status


@pytest.fixture
def tokenizer_needs_a_package(monkeypatch):
    """spacy.blank("ja") failing as it does without SudachiPy (spaCy finds that only when it builds
    the tokenizer), whether or not SudachiPy is installed here."""
    blank = spacy.blank

    def failing(lang, *args, **kwargs):
        if lang == "ja":
            raise ImportError("Japanese support requires SudachiPy and SudachiDict-core")
        return blank(lang, *args, **kwargs)

    monkeypatch.setattr(spacy, "blank", failing)


def test_the_check_builds_the_tokenizer(tokenizer_needs_a_package):
    assert spacy_lang_problem("en") is None
    assert spacy_lang_problem("ja") == ("--lang ja: spaCy cannot build its 'ja' tokenizer (Japanese support "
                                        "requires SudachiPy and SudachiDict-core)")
    assert spacy_lang_problem("qq").startswith("--lang qq: no such spaCy language ([E048]")


def test_perplexity_refuses_before_loading(tmp_path, tokenizer_needs_a_package):
    text = tmp_path / "t.txt"
    text.write_text("the cat sat\n")
    # the model does not exist: the language is checked first
    refused(["perplexity", tmp_path / "no-model", text, "--lang", "ja"], "--lang ja: spaCy cannot build its 'ja'")


@pytest.mark.parametrize("lang, expected", [("qq", "no such spaCy language ([E048]"),
                                            ("ja", "spaCy cannot build its 'ja' tokenizer")])
def test_pretrain_names_the_corpus_language(tmp_path, tiny_config_path, tokenizer_needs_a_package, lang, expected):
    text = tmp_path / "t.txt"
    text.write_text("the cat sat on the mat .\n" * 20)
    refused(["pretrain", tiny_config_path, tmp_path / "run", "--paths.train", text, "--corpus.lang", lang,
             "--training.max_steps", "1", "--quiet"], f"[corpus] lang '{lang}': {expected}")


def test_pretrain_names_the_language_of_a_spacy_corpus(tmp_path, tokenizer_needs_a_package):
    from spacy.tokens import Doc, DocBin

    path = tmp_path / "c.spacy"
    DocBin(docs=[Doc(spacy.blank("en").vocab, words=["a", "b"])]).to_disk(path)
    with pytest.raises(text_corpus.LanguageError, match=r"c\.spacy: reading it with \[corpus\] lang 'ja': spaCy "):
        text_corpus.TokenizedCorpus.prepare(path, tmp_path / "cache", lang="ja", progress=False)


@pytest.mark.parametrize("lang", ["qq", "ja"])
def test_build_word_table_refuses_before_any_work(capsys, tmp_path, tokenizer_needs_a_package, lang):
    script = _script("build_word_table")
    text = tmp_path / "t.txt"
    text.write_text("the cat\n")
    with pytest.raises(SystemExit) as exited:
        script.main([str(tmp_path / "table"), "--text", str(text), "--lang", lang, "--package", "no-such-package"])
    assert _status(exited.value.code) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert f"--lang {lang}: " in out and "Traceback" not in out and not (tmp_path / "table").exists()
