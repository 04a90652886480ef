"""The compiled cell kernel (engine/cell_kernel.py, engine/_lstm_cell.c) against PyTorch's cell update."""
import platform
import sys

import pytest
import torch

from spacy_elmo.bilm.engine.loops import cell_update


def _needs_kernel():
    from spacy_elmo.bilm.engine import cell_kernel

    if not cell_kernel.available():
        pytest.skip("the LSTM cell kernel is not built here (no C compiler at install, or not an x86-64 CPU with "
                    "AVX2/FMA)")
    return cell_kernel


def _cpu_has_avx2_fma() -> bool:
    try:
        flags = open("/proc/cpuinfo").read().split()
    except OSError:
        return False
    return "avx2" in flags and "fma" in flags


@pytest.mark.skipif(
    not (sys.platform.startswith("linux") and platform.machine() == "x86_64" and _cpu_has_avx2_fma()),
    reason="the kernel targets x86-64 CPUs with AVX2 and FMA",
)
def test_cell_kernel_is_built_where_it_applies():
    """The extension is optional at install; on the machines it targets (CI's) a
    failed build would silently leave `auto` on a slower backend, so fail here."""
    from spacy_elmo.bilm.engine import backends, cell_kernel

    assert cell_kernel.available()
    assert backends.resolve("auto") == "onednn+kernel"


@pytest.mark.parametrize("hidden", [1024, 13, 8, 1])
@pytest.mark.parametrize("cell_clip", [0.0, 3.0])
def test_cell_kernel_equals_the_pytorch_cell_update(hidden, cell_clip):
    """Sigmoids included, the tail columns past a multiple of 8, saturated inputs."""
    kernel = _needs_kernel()
    torch.manual_seed(0)
    for rows in (1, 5, 70):
        gates = torch.randn(rows, 4 * hidden) * 5
        gates[0, : min(4, 4 * hidden)] = torch.tensor([100.0, -100.0, 88.5, -1e30])[: min(4, 4 * hidden)]
        c2 = torch.randn(rows, hidden) * 4
        c_torch, m_torch = c2.clone(), torch.empty(rows, hidden)
        cell_update(torch.sigmoid(gates), c_torch, m_torch, cell_clip)
        c_kernel, m_kernel = c2.clone(), torch.empty(rows, hidden)
        kernel.update(gates, c_kernel, m_kernel, cell_clip)
        # c2 reaches ~20 unclipped: a few ulp of it
        torch.testing.assert_close(c_kernel, c_torch, rtol=2e-7, atol=5e-7)
        torch.testing.assert_close(m_kernel, m_torch, rtol=0, atol=5e-7)


def test_cell_kernel_rows_do_not_depend_on_batch_or_threads():
    kernel = _needs_kernel()
    torch.manual_seed(1)
    rows, hidden = 64, 1029  # 64 x 1029 is past the size where the kernel uses threads
    gates, c2 = torch.randn(rows, 4 * hidden) * 3, torch.randn(rows, hidden)
    threads = torch.get_num_threads()
    results = []
    try:
        for n_threads in (1, 2):
            torch.set_num_threads(n_threads)
            c, m = c2.clone(), torch.empty(rows, hidden)
            kernel.update(gates, c, m, 3.0)
            results.append((c, m))
    finally:
        torch.set_num_threads(threads)
    assert all(torch.equal(a, b) for a, b in zip(*results))
    for r in (0, 17, 63):  # one row at a time: the same bits
        c, m = c2[r : r + 1].clone(), torch.empty(1, hidden)
        kernel.update(gates[r : r + 1], c, m, 3.0)
        assert torch.equal(c[0], results[0][0][r]) and torch.equal(m[0], results[0][1][r])


def test_cell_kernel_rejects_buffers_it_cannot_read():
    kernel = _needs_kernel()
    gates, c2, m = torch.zeros(4, 32), torch.zeros(4, 8), torch.zeros(4, 8)
    with pytest.raises(ValueError, match="contiguous torch.float32"):
        kernel.update(gates.double(), c2, m, 0.0)
    with pytest.raises(ValueError, match="contiguous torch.float32"):
        kernel.update(gates, torch.zeros(8, 4).t(), m, 0.0)
    with pytest.raises(ValueError, match=r"shape \(4, 32\)"):
        kernel.update(torch.zeros(4, 31), c2, m, 0.0)
    with pytest.raises(ValueError, match="addend_index"):
        kernel.update(gates, c2, m, 0.0, torch.zeros(3, 32))


def test_cell_kernel_adds_table_rows_before_the_sigmoids():
    kernel = _needs_kernel()
    torch.manual_seed(2)
    rows, hidden = 37, 19
    gates, table = torch.randn(rows, 4 * hidden), torch.randn(6, 4 * hidden) * 2
    index = torch.randint(0, 6, (rows,))
    c2 = torch.randn(rows, hidden)
    c_torch, m_torch = c2.clone(), torch.empty(rows, hidden)
    cell_update(torch.sigmoid(gates + table[index]), c_torch, m_torch, 3.0)
    c_kernel, m_kernel = c2.clone(), torch.empty(rows, hidden)
    kernel.update(gates, c_kernel, m_kernel, 3.0, table, index)
    torch.testing.assert_close(c_kernel, c_torch, rtol=0, atol=5e-7)
    torch.testing.assert_close(m_kernel, m_torch, rtol=0, atol=5e-7)
    with pytest.raises(IndexError, match=r"addend row 6 out of range \[0, 6\)"):
        kernel.update(gates, c2.clone(), m_kernel, 3.0, table, torch.full((rows,), 6))
    with pytest.raises(ValueError, match="torch.int64"):
        kernel.update(gates, c2.clone(), m_kernel, 3.0, table, index.int())
