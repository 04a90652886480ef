"""Regression: what a GPU pretraining run got wrong, found by reading its CUDA paths (no GPU here).

- The distillation targets mixed devices: with the teacher on CUDA, the
  context targets indexed CPU ids with a CUDA mask and combined a CUDA mask
  with a CPU one, and the teacher cache called `.numpy()` on CUDA tensors.
  The tests that need a GPU run where one is (benchmarks/gpu_check.sh's
  machine) and skip here.
- A bfloat16 run on CUDA left the products autocast keeps in float32 (the
  LSTM's recurrence, the sampled softmax) off the tensor cores: TF32 is now
  allowed there, and a float32 run turns it off again.
"""
import pytest
import torch

from spacy_elmo.pretrain.building import training_autocast
from spacy_elmo.pretrain.distill import ContextTargets, Teacher
from spacy_elmo.pretrain.teacher_cache import build_cache
from spacy_elmo.pretrain.text_corpus import TokenizedCorpus

from ..pretrain.test_distill import SENTENCES

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (the bug was CUDA's)")


@pytest.fixture
def tf32_restored():
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


@pytest.mark.filterwarnings("ignore:.*CUDA is not available.*")
def test_reduced_precision_on_cuda_allows_tf32_and_float32_does_not(tf32_restored):
    training_autocast("float32", torch.device("cuda"))
    assert not torch.backends.cuda.matmul.allow_tf32
    training_autocast("bfloat16", torch.device("cpu"))
    assert not torch.backends.cuda.matmul.allow_tf32
    training_autocast("bfloat16", torch.device("cuda"))
    assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
    training_autocast("float32", torch.device("cuda"))  # a later float32 run in the same process is exact
    assert not torch.backends.cuda.matmul.allow_tf32 and not torch.backends.cudnn.allow_tf32


@needs_cuda
def test_context_targets_with_a_teacher_on_cuda(teacher_dir):
    corpus = SENTENCES * 3
    on_cpu = ContextTargets(Teacher(teacher_dir), iter(corpus), n_tokens=10**6, min_count=2)
    on_gpu = ContextTargets(Teacher(teacher_dir, device="cuda"), iter(corpus), n_tokens=10**6, min_count=2)
    expected, expected_mask = on_cpu.token_vectors(corpus)
    vectors, mask = on_gpu.token_vectors(corpus)
    assert torch.equal(mask.cpu(), expected_mask)
    torch.testing.assert_close(vectors.cpu(), expected, rtol=0, atol=1e-4)


@needs_cuda
def test_teacher_cache_built_by_a_teacher_on_cuda(teacher_dir, small_corpus, tmp_path):
    corpus = TokenizedCorpus.prepare(small_corpus, tmp_path / "corpus-cache", progress=False)
    cached = build_cache(Teacher(teacher_dir, device="cuda"), corpus.segments, corpus.info, tmp_path / "cache",
                         dim=4, progress=False)
    batch = list(corpus.segments())[:10]
    vectors, mask = cached.token_vectors(batch)
    assert vectors.shape == (sum(map(len, batch)), 4) and bool(mask.any())
