"""Short pretraining runs for the tests: configs with overrides, and a trainer ready to step."""
import time

from tqdm import tqdm

from spacy_elmo.pretrain import Trainer, load_config


def _config(path, **overrides):
    """The config at `path` with overrides written as keywords: section__key=value."""
    return load_config(path, {k.replace("__", "."): v for k, v in overrides.items()})


def _overrides(files, **extra):
    """Overrides for a one-epoch run on `files`, one thread, no evaluation or checkpoint on the way."""
    return {"paths.train": [str(f) for f in files], "training.threads": 1, "training.eval_every": 1000,
            "training.checkpoint_every": 1000, "training.max_epochs": 1, **extra}


def _trainer(config_path, files, out, **extra):
    """A Trainer with its data prepared and its model built, ready for `_step`."""
    config = load_config(config_path, _overrides(files, **extra))
    trainer = Trainer(config, out, device="cpu", progress=False)
    start = trainer._architecture(None)
    trainer.prepare_data()
    trainer._build(None, start)
    trainer.bar = tqdm(disable=True)
    trainer.started = time.perf_counter()
    return trainer
