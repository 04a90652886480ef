"""Regression: `targets = "context"` was fitted on other text after a resume under `[corpus] shard = "files"`.

The words' means were fitted on `ShardedCorpus.mine()`, this process's shares still unread in the
current epoch: a run resumed after a share was finished fitted them without it, so its targets were
not the fresh run's. They are now fitted on this process's shares of a fresh epoch's deal
(`first_deal`), whatever the run's progress.
"""
from ..pretrain.runs import _trainer
from ..pretrain.test_shards import four_files  # noqa: F401


def test_the_fitted_text_does_not_depend_on_the_epochs_progress(tiny_config_path, four_files, tmp_path):  # noqa: F811
    trainer = _trainer(tiny_config_path, four_files, tmp_path / "run", **{"corpus.shard": "files"})
    sharded = trainer.train_corpus
    fresh = list(trainer._corpus_segments())
    assert sharded.first_deal() == [0, 1, 2, 3] and len(fresh) > 0
    sharded.done[0] = 1  # share 0 read to its end, as a checkpoint after it records
    assert sharded.mine() == [1, 2, 3]
    assert list(trainer._corpus_segments()) == fresh


def test_an_output_directory_inside_the_training_directory_is_refused(tiny_config_path, small_corpus, tmp_path):
    """Its own files (the corpus cache, vocab.txt) would be read as training text on a resume."""
    import pytest

    from spacy_elmo.pretrain import Trainer, load_config
    from spacy_elmo.pretrain.settings import SettingsError

    from ..pretrain.runs import _overrides

    text = tmp_path / "text"
    text.mkdir()
    (text / "part0.txt").write_text(small_corpus.read_text(encoding="utf-8"), encoding="utf-8")
    for train in (str(text), str(text / "**" / "*.txt")):
        trainer = Trainer(load_config(tiny_config_path, _overrides([train])), text / "run", device="cpu",
                          progress=False)
        (text / "run").mkdir(exist_ok=True)
        (text / "run" / "vocab.txt").write_text("the\n", encoding="utf-8")
        with pytest.raises(SettingsError, match="output directory|matches files of the output"):
            trainer.prepare_data()
    Trainer(load_config(tiny_config_path, _overrides([str(text / "part0.txt")])), text / "run", device="cpu",
            progress=False).prepare_data()  # a file beside the output: fine
