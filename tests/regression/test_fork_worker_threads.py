"""Regression: nlp.pipe(n_process=2) hung once the parent had used torch's thread pool.

OpenMP's pool does not survive fork; the component now switches a forked
worker to one torch thread before its first parallel region.
"""
import subprocess
import sys

SCRIPT = """
import spacy, torch, numpy
torch.set_num_threads(2)
nlp = spacy.blank("en")
nlp.add_pipe("elmo", config={{"weights": {weights!r}}})
texts = ["Sentence number %d is a somewhat longer one ." % i for i in range(40)]
one = [d._.elmo for d in nlp.pipe(texts)]          # the parent runs parallel regions first
two = [d._.elmo for d in nlp.pipe(texts, n_process=2, batch_size=10)]
assert max(float(numpy.abs(a - b).max()) for a, b in zip(one, two)) < 1e-5
print("ok")
"""


def test_pipe_with_two_processes_does_not_hang(allennlp_dir):
    env_free = {k: v for k, v in __import__("os").environ.items() if k != "OMP_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(weights=str(allennlp_dir))],
                         capture_output=True, text=True, timeout=240, env=env_free)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-2000:]
