"""Regression: a corpus glob spelled from another folder counted as other settings.

`path_identity` digested a glob's matches by their names as spelled, so
`corpus/ewt-d*.spacy` run from the project folder and `main/corpus/ewt-d*.spacy` run from
its parent (the same files) differed, and a finished run was refused as made with other
settings, though the docstring promised comparison by contents. Matches are now named
relative to the glob's folders without wildcards: the same files give the same identity,
and other names or contents still differ.
"""
from spacy_elmo.resumable_training import path_identity, settings_differences


def _corpus(root):
    corpus = root / "main" / "corpus"
    (corpus / "more").mkdir(parents=True)
    (corpus / "ewt-dev.spacy").write_bytes(b"dev")
    (corpus / "ewt-dtest.spacy").write_bytes(b"test")
    (corpus / "more" / "ewt-dx.spacy").write_bytes(b"more")
    return corpus


def test_two_spellings_of_one_glob_are_the_same_corpus(tmp_path, monkeypatch):
    corpus = _corpus(tmp_path)
    monkeypatch.chdir(tmp_path / "main")
    near = {"dev": path_identity("corpus/ewt-d*.spacy"), "all": path_identity("corpus/**/ewt-d*.spacy")}
    monkeypatch.chdir(tmp_path)
    far = {"dev": path_identity("main/corpus/ewt-d*.spacy"), "all": path_identity("./main/corpus/**/ewt-d*.spacy")}
    absolute = {"dev": path_identity(str(corpus / "ewt-d*.spacy")),
                "all": path_identity(str(corpus / "**/ewt-d*.spacy"))}
    assert near["dev"]["files"] == 2 and near["all"]["files"] == 3
    assert settings_differences(near, far) == [] and settings_differences(near, absolute) == []


def test_other_names_or_contents_still_differ(tmp_path, monkeypatch):
    corpus = _corpus(tmp_path)
    monkeypatch.chdir(tmp_path)

    def differing() -> list:
        now = {"dev": path_identity("main/corpus/ewt-d*.spacy")}
        return [difference.split(":")[0] for difference in settings_differences(before, now)]

    before = {"dev": path_identity("main/corpus/ewt-d*.spacy")}
    (corpus / "ewt-dtest.spacy").rename(corpus / "ewt-dtrain.spacy")  # same bytes, another name
    assert path_identity("main/corpus/ewt-d*.spacy")["bytes"] == before["dev"]["bytes"]
    assert differing() == ["dev"]
    (corpus / "ewt-dtrain.spacy").rename(corpus / "ewt-dtest.spacy")
    (corpus / "ewt-dev.spacy").write_bytes(b"DEV")  # same name and size, other contents
    assert differing() == ["dev"]
    (corpus / "ewt-dev.spacy").write_bytes(b"dev")
    assert differing() == []
