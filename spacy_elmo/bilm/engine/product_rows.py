"""How many rows each inference matrix product is computed with, so that batching never changes a bit.

A BLAS library picks its kernel by the product's shape, and a row of the
result can come out different in the last bits depending on how many rows
the product has. A sentence's layers would then depend on which other
sentences share its batch (DESIGN.md: they must not). What the libraries
do at the biLM's shapes (oneDNN checked on 1 and 2 threads):

* oneDNN with packed weights (the LSTM products): every height from 3 rows
  up to 8,193 gives the same bits; with plain weights (the token encoder's)
  from 2 rows up;
* MKL: products of 1 to 3 rows run another kernel. With several threads,
  MKL splits a product's rows between them in blocks of 4 and hands the
  last 1 to 3 rows to that kernel too: on 2 threads, heights 5-7 and 9-11
  differ from taller products (on 16 threads also 17-19 and 25-27). Every
  multiple of 4 from 8 rows up agrees with every other: checked to 1,200
  rows on 1 to 4 threads for the step products and the token encoder's
  wider ones (the highway, K = 2,048), to 600 rows on 8 and 16 threads for
  the step products. On an Intel CPU with AVX-512 and AMX, MKL also runs
  the token encoder's wide products (K = 1,024 and 2,048) with other
  kernels below a height that grows with the threads: they agree with
  taller products from 192 rows on 1 thread, from 132 (K = 1,024) and 260
  (K = 2,048) rows on 2 (tests/regression/test_batch_invariance.py failed
  with 64; the narrower products and the step products agree from 4 rows).

So every product without gradients is padded with zero rows to
`product_rows(n, ...)` rows and the result's first n rows are kept; on MKL
that height is a multiple of 4 (tests/regression/test_mkl_thread_split.py).
On oneDNN the height is also rounded up to one of ~32 heights per octave: oneDNN
builds a kernel for each new shape (and caches at most 1,024), and the
heights follow the data, so rounding keeps the shapes, and the builds, few. Products
with gradients (training) are never padded: there, batch invariance is not
a goal and the padding would be wasted work.
"""
import torch

# the fewest rows of a product, per library and product: see the module docstring
ONEDNN_MIN_ROWS = 8
MKL_MIN_ROWS = {"step": 8, "encoder": 384}
MKL_ROW_BLOCK = 4
# the first LSTM layer's per-token input products (`loops.table_products`)
# of more rows than this are computed at a multiple of it: a batch's table height
# follows its vocabulary, so a coarse step keeps oneDNN's kernels few
TABLE_GRANULE = 256
# the tallest product checked row-invariant on oneDNN: taller ones are computed in parts
MAX_ROWS = 8192


def product_rows(n: int, library: str, product: str = "step") -> int:
    """The height at which to compute an n-row product.

    library: "onednn" or "mkl" (PyTorch's own products: MKL on CPU, cuBLAS on GPU).
    product: "step" (an LSTM step or projection), "encoder" (the token
        encoder's products) or "table" (per-token input products).
    """
    if library == "onednn":
        if product == "table" and n > TABLE_GRANULE:
            return -(-n // TABLE_GRANULE) * TABLE_GRANULE
        # ~32 heights per octave: at most 1/32 more rows; non-decreasing in n
        granule = max(ONEDNN_MIN_ROWS, 1 << max(0, n.bit_length() - 6))
        return -(-max(n, 1) // granule) * granule
    # a multiple of MKL's row block: no thread is left a 1- to 3-row remainder
    return max(-(-n // MKL_ROW_BLOCK) * MKL_ROW_BLOCK, MKL_MIN_ROWS["encoder" if product == "encoder" else "step"])


def pad_rows(x: torch.Tensor, height: int) -> torch.Tensor:
    """x (n, k) with zero rows appended up to `height` rows (x itself if n == height)."""
    n = x.shape[0]
    return x if height == n else torch.cat([x, x.new_zeros((height - n, x.shape[1]))])


__all__ = ["MAX_ROWS", "MKL_MIN_ROWS", "MKL_ROW_BLOCK", "ONEDNN_MIN_ROWS", "TABLE_GRANULE", "pad_rows", "product_rows"]
