"""Which vocabulary file a published-format directory's loader reads (io.layouts.PUBLISHED_VOCAB)."""
import pytest

from spacy_elmo.io import find_published_files


def _published(tmp_path, *vocab_names):
    (tmp_path / "options.json").write_text("{}")
    (tmp_path / "weights.hdf5").write_bytes(b"")
    for name in vocab_names:
        (tmp_path / name).write_text("<S>\n</S>\n<UNK>\n")
    return find_published_files(tmp_path)[2]


@pytest.mark.parametrize("names, chosen", [
    (("vocab.txt",), "vocab.txt"),
    (("vocab.txt", "vocab-2016-09-10.txt"), "vocab.txt"),  # the preferred name wins over the pattern
    (("vocab-2016-09-10.txt",), "vocab-2016-09-10.txt"),
    (("vocab-2016-09-10.txt", "._vocab-2016-09-10.txt"), "vocab-2016-09-10.txt"),  # hidden files are not models'
    (("a_vocab.txt", "b_vocab.txt"), None),  # several to choose from: none is guessed
    ((), None),
])
def test_the_vocabulary_file_a_published_directory_gives(tmp_path, names, chosen):
    found = _published(tmp_path, *names)
    assert (found.name if found is not None else None) == chosen
