"""The fused recurrence equals plain autograd, and the state semantics hold."""
import platform
import sys

import pytest
import torch

from spacy_elmo.bilm import BiLMConfig, BiLSTMStack, LSTMState


def _stack(cell_clip=0.5, proj_clip=0.3, skip=True):
    torch.manual_seed(0)
    config = BiLMConfig(
        lstm_dim=8, projection_dim=4, n_layers=2, cell_clip=cell_clip, proj_clip=proj_clip,
        use_skip_connections=skip, filters=((1, 4),), n_highway=0,
    )
    stack = BiLSTMStack(config).double()
    for p in stack.parameters():
        p.data.normal_(0, 0.8)
    return stack


def _run(stack, fused, x, lengths, h0, c0):
    stack.fused = fused
    outs, final = stack(x, lengths, LSTMState(tuple(h0), tuple(c0)))
    w = torch.linspace(-1, 1, outs[-1].numel(), dtype=torch.double).view_as(outs[-1])
    loss = (outs[-1] * w).sum() + (outs[0] ** 2).sum()
    loss = loss + sum((h ** 3).sum() for h in final.h) + sum((0.7 * c).sum() for c in final.c)
    grads = torch.autograd.grad(loss, [x, *h0, *c0, *stack.parameters()])
    return [o.detach() for o in outs], final, grads


def test_fused_backward_equals_autograd():
    for clips in ((0.5, 0.3), (None, None)):
        stack = _stack(*clips)
        x = torch.randn(2, 5, 7, 4, dtype=torch.double, requires_grad=True)
        lengths = torch.tensor([7, 3, 0, 5, 7])
        h0 = [torch.randn(2, 5, 4, dtype=torch.double, requires_grad=True) for _ in range(2)]
        c0 = [torch.randn(2, 5, 8, dtype=torch.double, requires_grad=True) for _ in range(2)]
        fused = _run(stack, True, x, lengths, h0, c0)
        plain = _run(stack, False, x, lengths, h0, c0)
        for a, b in zip(fused[0], plain[0]):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-12)
        for a, b in zip(fused[2], plain[2]):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-10)


def test_fused_gradcheck():
    stack = _stack()
    lengths = torch.tensor([3, 1, 2])
    x = torch.randn(2, 3, 3, 4, dtype=torch.double, requires_grad=True)

    def fn(inputs):
        outs, final = stack(inputs, lengths)
        return outs[-1].sum() + final.h[0].sum() + final.c[1].sum()

    assert torch.autograd.gradcheck(fn, (x,), eps=1e-6, atol=1e-5)


def test_final_state_is_each_rows_last_step_and_padding_is_zero():
    stack = _stack()
    x = torch.randn(2, 3, 6, 4, dtype=torch.double)
    lengths = torch.tensor([6, 2, 4])
    with torch.no_grad():
        outs, final = stack(x, lengths)
    for b, n in enumerate(lengths.tolist()):
        torch.testing.assert_close(final.h[-1][:, b], outs[-1][:, b, n - 1] - (outs[-2][:, b, n - 1]))
        assert torch.all(outs[-1][:, b, n:] == 0)


def test_no_grad_path_equals_grad_path():
    """Inference runs its own loop (stacked [x, h] product, tanh via sigmoid): same numbers."""
    for clips, skip in (((0.5, 0.3), True), ((None, None), False)):
        stack = _stack(*clips, skip=skip)
        x = torch.randn(2, 5, 6, 4, dtype=torch.double)
        lengths = torch.tensor([5, 6, 0, 1, 3])
        state = LSTMState(
            tuple(torch.randn(2, 5, 4, dtype=torch.double) for _ in range(2)),
            tuple(torch.randn(2, 5, 8, dtype=torch.double) for _ in range(2)),
        )
        with torch.no_grad():
            a, final_a = stack(x, lengths, state)
        b, final_b = stack(x.clone().requires_grad_(), lengths, state)
        for p, q in zip([*a, *final_a.h, *final_a.c], [*b, *final_b.h, *final_b.c]):
            torch.testing.assert_close(p, q.detach(), rtol=0, atol=1e-12)
        assert torch.equal(final_a.h[0][:, 2], state.h[0][:, 2])  # an empty row keeps its state


def test_no_grad_path_float32_within_reference_tolerance():
    stack = _stack().float()
    x = torch.randn(2, 8, 30, 4) * 2
    lengths = torch.tensor([30, 29, 12, 1, 30, 7, 8, 15])
    with torch.no_grad():
        a, _ = stack(x, lengths)
    b, _ = stack(x.clone().requires_grad_(), lengths)
    for p, q in zip(a, b):
        torch.testing.assert_close(p, q.detach(), rtol=0, atol=1e-6)


def _float_case_on_onednn():
    """A float32 stack, inputs with empty and one-step rows, and a random state;
    skips where oneDNN's operators are not usable."""
    from spacy_elmo.bilm import onednn

    stack = _stack().float()
    x = torch.randn(2, 9, 25, 4) * 2
    with torch.no_grad():
        if not onednn.usable(x):
            pytest.skip("this PyTorch build has no oneDNN linear operators (or they are disabled)")
    lengths = torch.tensor([25, 3, 0, 1, 25, 7, 8, 15, 2])
    state = LSTMState(tuple(torch.randn(2, 9, 4) for _ in range(2)), tuple(torch.randn(2, 9, 8) for _ in range(2)))
    return stack, x, lengths, state


def test_onednn_and_mkl_inference_paths_agree(monkeypatch):
    """Inference runs on oneDNN where usable (float32 CPU), else on MKL: same numbers."""
    from spacy_elmo.bilm import onednn

    stack, x, lengths, state = _float_case_on_onednn()
    with torch.no_grad():
        dnn, final_dnn = stack(x, lengths, state)
        monkeypatch.setattr(onednn, "ENABLED", False)
        assert not onednn.usable(x)
        mkl, final_mkl = stack(x, lengths, state)
    for p, q in zip([*dnn, *final_dnn.h, *final_dnn.c], [*mkl, *final_mkl.h, *final_mkl.c]):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-6)
    assert torch.equal(final_dnn.c[1][:, 2], state.c[1][:, 2])  # an empty row keeps its state


def test_onednn_is_used_only_where_it_applies():
    from spacy_elmo.bilm import onednn

    x = torch.zeros(3, 4)
    with torch.no_grad():
        assert not onednn.usable(x.double())
        with torch.autocast("cpu", dtype=torch.bfloat16):
            assert not onednn.usable(x)
    assert not onednn.usable(x)  # gradients on: the training path


def test_onednn_probe_falls_back_when_the_operator_fails(monkeypatch):
    """A build whose oneDNN lacks the primitive (or computes it wrongly) takes the MKL path."""
    from spacy_elmo.bilm import onednn

    def broken(*args):
        raise RuntimeError("could not create a primitive descriptor")

    monkeypatch.setattr(onednn, "_WORKS", None)
    monkeypatch.setattr(onednn, "_LINEAR", broken)
    stack = _stack().float()
    x = torch.randn(2, 3, 4, 4)
    with torch.no_grad():
        assert not onednn.usable(x)
        out, _ = stack(x, torch.tensor([4, 2, 1]))  # runs, on MKL
    assert out[-1].shape == (2, 3, 4, 4)


# -- the compiled cell kernel (cell_kernel.py, _lstm_cell.c) ---------------------------
def _needs_kernel():
    from spacy_elmo.bilm import cell_kernel

    if not cell_kernel.available():
        pytest.skip("the LSTM cell kernel is not built here (no C compiler at install, or not an x86-64 CPU with AVX2/FMA)")
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
    failed build would silently fall back to the slower path, so fail here."""
    from spacy_elmo.bilm import cell_kernel

    assert cell_kernel.available()


@pytest.mark.parametrize("hidden", [1024, 13, 8, 1])
@pytest.mark.parametrize("cell_clip", [0.0, 3.0])
def test_cell_kernel_equals_the_pytorch_cell_update(hidden, cell_clip):
    """Sigmoids included, the tail columns past a multiple of 8, saturated inputs."""
    from spacy_elmo.bilm.lstm import _cell_update

    kernel = _needs_kernel()
    torch.manual_seed(0)
    for rows in (1, 5, 70):
        gates = torch.randn(rows, 4 * hidden) * 5
        gates[0, : min(4, 4 * hidden)] = torch.tensor([100.0, -100.0, 88.5, -1e30])[: min(4, 4 * hidden)]
        c2 = torch.randn(rows, hidden) * 4
        c_torch, m_torch = c2.clone(), torch.empty(rows, hidden)
        _cell_update(torch.sigmoid(gates), c_torch, m_torch, cell_clip)
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


def test_cell_kernel_is_used_only_where_it_applies(monkeypatch):
    from spacy_elmo.bilm import cell_kernel

    x = torch.zeros(3, 4)
    assert not cell_kernel.usable(x)  # gradients on: the training path
    with torch.no_grad():
        assert not cell_kernel.usable(x.double())
        monkeypatch.setattr(cell_kernel, "ENABLED", False)
        assert not cell_kernel.usable(x)


def test_inference_with_and_without_the_cell_kernel_agrees(monkeypatch):
    """The oneDNN loop with the kernel (products without activation) and without it."""
    from spacy_elmo.bilm import cell_kernel

    _needs_kernel()
    stack, x, lengths, state = _float_case_on_onednn()
    calls = []
    real_update = cell_kernel.update
    monkeypatch.setattr(cell_kernel, "update", lambda *a: calls.append(1) or real_update(*a))
    with torch.no_grad():
        fused, final_fused = stack(x, lengths, state)
        assert calls, "the kernel was not used"
        monkeypatch.setattr(cell_kernel, "ENABLED", False)
        plain, final_plain = stack(x, lengths, state)
    for p, q in zip([*fused, *final_fused.h, *final_fused.c], [*plain, *final_plain.h, *final_plain.c]):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-6)


# -- inference weights kept between calls ------------------------------------------------
def test_inference_weights_are_kept_and_follow_weight_changes(monkeypatch):
    from spacy_elmo.bilm import lstm, onednn

    stack = _stack().float()
    x = torch.randn(2, 5, 9, 4)
    lengths = torch.tensor([9, 9, 4, 2, 1])
    with torch.no_grad():
        stack(x, lengths)
        kept = stack._kept_weights[0][1]
        stack(x, lengths)
        assert stack._kept_weights[0][1] is kept  # reused, not rebuilt
        stack.weight_hh[0].mul_(0.5)  # in place, as an optimizer step or load_state_dict does
        changed, _ = stack(x, lengths)
        assert stack._kept_weights[0][1] is not kept
    reference, _ = stack(x, lengths)  # the training path builds nothing to keep
    for p, q in zip(changed, reference):
        torch.testing.assert_close(p, q.detach(), rtol=0, atol=1e-6)
    with torch.no_grad():
        monkeypatch.setattr(onednn, "ENABLED", False)
        stack(x, lengths)
        assert stack._kept_weights[0][1].packed is None  # MKL's layout now
        stack.clear_inference_cache()
        assert not stack._kept_weights
        monkeypatch.setattr(lstm, "INFERENCE_WEIGHTS_CACHED_BYTES", 0)
        stack(x, lengths)
        assert not stack._kept_weights  # too large to keep: built per call


def test_clear_cache_drops_the_kept_inference_weights(allennlp_bilm):
    allennlp_bilm.embed([["A", "test", "."]])
    assert allennlp_bilm.lstm._kept_weights
    allennlp_bilm.clear_cache()
    assert not allennlp_bilm.lstm._kept_weights


def test_a_stack_with_kept_weights_copies_and_pickles():
    """oneDNN's packed tensors cannot be copied or pickled: they are left behind."""
    import copy
    import pickle

    stack = _stack().float()
    x = torch.randn(2, 3, 5, 4)
    with torch.no_grad():
        expected, _ = stack(x, torch.tensor([5, 3, 1]))
        assert stack._kept_weights
        for clone in (copy.deepcopy(stack), pickle.loads(pickle.dumps(stack))):
            assert not clone._kept_weights
            got, _ = clone(x, torch.tensor([5, 3, 1]))
            assert all(torch.equal(a, b) for a, b in zip(got, expected))


def test_cell_kernel_adds_table_rows_before_the_sigmoids():
    from spacy_elmo.bilm.lstm import _cell_update

    kernel = _needs_kernel()
    torch.manual_seed(2)
    rows, hidden = 37, 19
    gates, table = torch.randn(rows, 4 * hidden), torch.randn(6, 4 * hidden) * 2
    index = torch.randint(0, 6, (rows,))
    c2 = torch.randn(rows, hidden)
    c_torch, m_torch = c2.clone(), torch.empty(rows, hidden)
    _cell_update(torch.sigmoid(gates + table[index]), c_torch, m_torch, 3.0)
    c_kernel, m_kernel = c2.clone(), torch.empty(rows, hidden)
    kernel.update(gates, c_kernel, m_kernel, 3.0, table, index)
    torch.testing.assert_close(c_kernel, c_torch, rtol=0, atol=5e-7)
    torch.testing.assert_close(m_kernel, m_torch, rtol=0, atol=5e-7)
    with pytest.raises(IndexError, match=r"addend row 6 out of range \[0, 6\)"):
        kernel.update(gates, c2.clone(), m_kernel, 3.0, table, torch.full((rows,), 6))
    with pytest.raises(ValueError, match="torch.int64"):
        kernel.update(gates, c2.clone(), m_kernel, 3.0, table, index.int())


@pytest.mark.parametrize("use_kernel", [True, False])
def test_token_table_inputs_give_the_same_layers(monkeypatch, use_kernel):
    """Inputs given as rows of a token table (first-layer input products per
    distinct token, with the kernel) agree with the same inputs given dense."""
    from spacy_elmo.bilm import cell_kernel, onednn

    if use_kernel:
        _needs_kernel()
    monkeypatch.setattr(cell_kernel, "ENABLED", use_kernel)
    stack = _stack(cell_clip=0.5).float()
    table = torch.randn(7, 4) * 2
    index = torch.randint(0, 7, (2, 9, 25))
    lengths = torch.tensor([3, 25, 0, 1, 25, 7, 8, 15, 2])  # unsorted: rows are reordered inside
    state = LSTMState(tuple(torch.randn(2, 9, 4) for _ in range(2)), tuple(torch.randn(2, 9, 8) for _ in range(2)))
    calls = []
    real_products = __import__("spacy_elmo.bilm.lstm", fromlist=["_table_products"])._table_products
    monkeypatch.setattr("spacy_elmo.bilm.lstm._table_products", lambda *a: calls.append(1) or real_products(*a))
    with torch.no_grad():
        if not onednn.usable(table):
            pytest.skip("this PyTorch build has no oneDNN linear operators (or they are disabled)")
        rows, final_rows = stack(table[index], lengths, state, token_rows=(table, index))
        dense, final_dense = stack(table[index], lengths, state)
    assert bool(calls) == use_kernel  # the per-token products are the kernel's path only
    for p, q in zip([*rows, *final_rows.h, *final_rows.c], [*dense, *final_dense.h, *final_dense.c]):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-6)


@pytest.mark.parametrize("use_kernel", [True, False])
def test_rows_sharing_a_first_token_share_their_first_step(monkeypatch, use_kernel):
    """With a shared start state, each direction's first step is computed once
    per distinct first token and copied: the same bits as every row computed,
    rows of length 0 and 1 included."""
    from spacy_elmo.bilm import cell_kernel, lstm, onednn

    if use_kernel:
        _needs_kernel()
    monkeypatch.setattr(cell_kernel, "ENABLED", use_kernel)
    stack = _stack(cell_clip=0.5).float()
    torch.manual_seed(0)
    table = torch.randn(6, 4) * 2
    lengths = torch.tensor([3, 25, 0, 1, 25, 7, 8, 15, 2, 1, 9])  # unsorted: rows are reordered inside
    index = torch.randint(2, 6, (2, 11, 25))
    index[0, :, 0] = torch.tensor([0, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0])  # few distinct first tokens
    index[1, :, 0] = 5
    start = LSTMState(tuple(torch.randn(2, 1, 4).expand(2, 11, 4).contiguous() for _ in range(2)),
                      tuple(torch.randn(2, 1, 8).expand(2, 11, 8).contiguous() for _ in range(2)))
    calls = []
    real = lstm._shared_first_step
    monkeypatch.setattr(lstm, "_shared_first_step", lambda *a: calls.append(a[-2][0].shape[0]) or real(*a))
    with torch.no_grad():
        if not onednn.usable(table):
            pytest.skip("this PyTorch build has no oneDNN linear operators (or they are disabled)")
        shared, final_shared = stack(table[index], lengths, start, token_rows=(table, index), shared_start=True)
        monkeypatch.setattr(lstm, "SHARE_FIRST_STEPS", False)
        alone, final_alone = stack(table[index], lengths, start, token_rows=(table, index), shared_start=True)
    assert sorted(calls) == [1, 1, 2, 2]  # per layer: 2 groups forward, 1 backward
    for p, q in zip([*shared, *final_shared.h, *final_shared.c], [*alone, *final_alone.h, *final_alone.c]):
        assert torch.equal(p, q), float((p - q).abs().max())
    assert not shared[0][:, 2].any()  # the empty row has no outputs


def test_table_products_are_the_same_bits_in_any_chunking(monkeypatch):
    """Rows of the per-token input products do not depend on how the table is cut."""
    from spacy_elmo.bilm import lstm, onednn

    table, weight, bias = torch.randn(301, 16), torch.randn(64, 16), torch.randn(64)
    with torch.no_grad():
        if not onednn.usable(table):
            pytest.skip("this PyTorch build has no oneDNN linear operators (or they are disabled)")
        packed = onednn.pack(weight)
        whole = lstm._table_products(table, packed, bias)
        monkeypatch.setattr(lstm, "TABLE_PRODUCT_ROWS", 40)  # 7 chunks of 40 and a padded 21
        assert torch.equal(lstm._table_products(table, packed, bias), whole)
    torch.testing.assert_close(whole, table @ weight.t() + bias, rtol=0, atol=1e-5)


def test_first_layer_input_packs_only_where_the_kernel_reads_them(monkeypatch):
    from spacy_elmo.bilm import cell_kernel

    stack, x, lengths, state = _float_case_on_onednn()
    monkeypatch.setattr(cell_kernel, "ENABLED", False)
    with torch.no_grad():
        stack(x, lengths, state)
        assert stack._kept_weights[0][1].packed[0].input is None
        if cell_kernel.available():
            monkeypatch.setattr(cell_kernel, "ENABLED", True)
            stack(x, lengths, state)  # the key changes with the kernel: rebuilt with the packs
            assert stack._kept_weights[0][1].packed[0].input is not None
        assert stack._kept_weights[1][1].packed[0].input is None  # never for the upper layers
