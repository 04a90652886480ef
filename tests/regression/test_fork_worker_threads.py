"""nlp.pipe(n_process=2): no hang, the same numbers as one process, and vector hooks explained.

Regression: the workers hung once the parent had used torch's thread pool
(OpenMP's pool does not survive fork); a forked worker now switches to one
torch thread before its first batch. Vector hooks are functions and do not
come back from the workers (spaCy sends docs as bytes): each worker says so
once, and `set_vector_hooks` installs them again.
"""
import subprocess
import sys

SCRIPT = """
import spacy, torch, numpy
from spacy_elmo.pipeline import set_vector_hooks
torch.set_num_threads(2)
nlp = spacy.blank("en")
nlp.add_pipe("elmo", config={{"weights": {weights!r}, "set_vector_hooks": True}})
texts = ["Sentence number %d is a somewhat longer one ." % i for i in range(40)] + ["", "x"]
one = [d._.elmo for d in nlp.pipe(texts)]          # the parent runs parallel regions first
docs = list(nlp.pipe(texts, n_process=2, batch_size=10))
assert len(docs) == len(one)
assert max(float(numpy.abs(a - d._.elmo).max()) for a, d in zip(one, docs) if a.size) < 1e-5
assert not docs[0].has_vector                      # the hooks stayed in the workers
set_vector_hooks(docs[0])
assert docs[0].has_vector and numpy.array_equal(docs[0].vector, docs[0]._.elmo_vector)
print("ok")
"""
WARNING = "set_vector_hooks in a worker process"


def test_pipe_with_two_processes(allennlp_dir):
    env_free = {k: v for k, v in __import__("os").environ.items() if k != "OMP_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(weights=str(allennlp_dir))],
                         capture_output=True, text=True, timeout=240, env=env_free)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-2000:]
    assert 1 <= out.stderr.count(WARNING) <= 2, out.stderr[-2000:]  # once per worker
