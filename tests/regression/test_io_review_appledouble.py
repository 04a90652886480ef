"""Regression: macOS's AppleDouble `._NAME` files broke published directories and archives.

The published files are found by pattern (`*options*.json`,
`*weights*.hdf5`), and the patterns matched the hidden `._elmo_options.json`
that macOS writes beside each file it copies or tars, so a directory with
AllenNLP's file names (or an archive made on a Mac) was refused with
"several candidates for the options file". Names starting with "." are
never a model's file now, as the archive root search already held.
"""
import shutil
import tarfile

import numpy

from spacy_elmo.io import load_bilm, resolve_source
from spacy_elmo.io.layouts import layouts_in

from ..io.model_server import published_dir, tiny_bilm

SENTENCE = [["a", "bank"]]
APPLEDOUBLE = b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        "


def _allennlp_names_with_appledouble(tmp_path):
    directory = published_dir(tmp_path / "elmo", tiny_bilm(5))
    (directory / "options.json").rename(directory / "elmo_2x8_4_options.json")
    (directory / "weights.hdf5").rename(directory / "elmo_2x8_4_weights.hdf5")
    for name in ("elmo_2x8_4_options.json", "elmo_2x8_4_weights.hdf5"):
        (directory / f"._{name}").write_bytes(APPLEDOUBLE)
    return directory


def test_a_directory_with_appledouble_files_loads(tmp_path):
    directory = _allennlp_names_with_appledouble(tmp_path)
    assert layouts_in(directory) == {"published": ["elmo_2x8_4_options.json", "elmo_2x8_4_weights.hdf5"]}
    numpy.testing.assert_array_equal(load_bilm(directory).embed(SENTENCE)[0], tiny_bilm(5).embed(SENTENCE)[0])


def test_an_archive_made_on_a_mac_loads(tmp_path, cache):
    directory = _allennlp_names_with_appledouble(tmp_path)
    archive = tmp_path / "elmo.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(directory, "elmo")
    shutil.rmtree(directory)
    entry = resolve_source(str(archive), progress=False)
    numpy.testing.assert_array_equal(load_bilm(entry).embed(SENTENCE)[0], tiny_bilm(5).embed(SENTENCE)[0])
