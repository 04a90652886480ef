"""Regression: `nlp.pipe(n_process=2)` hung for good in two setups, on any machine where torch runs more
than one thread (its default without OMP_NUM_THREADS=1):

- a component that runs its own biLM (`replace_listeners`, then `elmo` removed: the documented way to
  ship a tagger alone): the one-thread setting of spaCy's workers lived in `Elmo.predict` only, so the
  standalone model's first product in a forked worker waited in OpenMP's inherited pool for ever;
- the `elmo` component with `threads = 2`: it set the worker to one thread, then back to two.

Every biLM prediction now settles the worker's threads first (`threads.spacy_worker_threads`), and in
a forked worker an explicit count above one is one (with a warning). The pipelines run in a child
process whose parent predicts on two threads first (OpenMP's pool started, as after `spacy.load`);
a hang is a failure after `HANG` seconds, not a suite that never ends.
"""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .watched_stderr import HANG

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent('''
    import sys, warnings
    import spacy, torch
    from spacy.training import Example

    torch.set_num_threads(2)
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": sys.argv[2]})
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2",
                                             "tok2vec": {"@architectures": "spacy-elmo.ElmoListener.v1"}}})
    example = Example.from_dict(nlp.make_doc("I like eggs ."), {"tags": ["PRP", "VBP", "NNS", "."]})
    nlp.initialize(lambda: [example])
    if sys.argv[1] == "standalone":
        nlp.replace_listeners("elmo", "tagger", ["model.tok2vec"])
        nlp.remove_pipe("elmo")
    else:
        nlp.get_pipe("elmo").cfg["threads"] = int(sys.argv[1])
    texts = ["I like green eggs and ham .", "a dog ran off", "birds fly south in winter"] * 3
    serial = [[t.tag_ for t in doc] for doc in nlp.pipe(texts)]  # OpenMP's pool runs two threads now
    with warnings.catch_warnings(record=True):
        forked = [[t.tag_ for t in doc] for doc in nlp.pipe(texts, n_process=2, batch_size=2)]
    print("same" if forked == serial else f"differ: {forked} {serial}")
''')


@pytest.mark.parametrize("case", ["standalone", "2", "0"])
def test_forked_workers_of_a_two_thread_parent_finish(allennlp_dir, tmp_path, case):
    script = tmp_path / "pipe.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}  # torch's default: all cores
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])  # this checkout's package
    try:
        done = subprocess.run([sys.executable, str(script), case, str(allennlp_dir)], capture_output=True,
                              text=True, timeout=HANG, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"nlp.pipe(n_process=2) with {case!r} hangs")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "same"
