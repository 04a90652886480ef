"""Corpus files are read plain or gzipped, whichever of `x.conllu` / `x.conllu.gz` exists."""
import gzip
import shutil

import pytest

from spacy_elmo.gold_data import CorpusError, find_input, ud_docs, uner_docs


@pytest.mark.parametrize("name, reader", [("en_ewt-ud-dev.conllu", ud_docs), ("en_ewt-ud-dev.iob2", uner_docs)])
def test_plain_and_gzipped_files_give_the_same_docs(data_dir, tmp_path, name, reader):
    folder = "ud_en_ewt" if name.endswith("conllu") else "uner_en_ewt"
    gzipped = data_dir / folder / f"{name}.gz"
    plain = tmp_path / name
    with gzip.open(gzipped, "rt", encoding="utf-8") as source:
        plain.write_text(source.read(), encoding="utf-8")
    expected = [[t.text for t in d] for d in reader(gzipped, n_sents=5, limit=30)]
    assert [[t.text for t in d] for d in reader(plain, n_sents=5, limit=30)] == expected
    # either name finds the file that exists
    assert find_input(tmp_path / f"{name}.gz") == plain
    # gzipped content under a plain name is recognised by its first bytes
    (tmp_path / "renamed").mkdir()
    shutil.copy(gzipped, tmp_path / "renamed" / name)
    assert [[t.text for t in d] for d in reader(tmp_path / "renamed" / name, n_sents=5, limit=30)] == expected


def test_a_missing_file_names_both_candidates(tmp_path):
    with pytest.raises(CorpusError, match="en_ewt-ud-dev.conllu.gz"):
        find_input(tmp_path / "en_ewt-ud-dev.conllu")
