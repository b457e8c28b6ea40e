"""Traces print as readable Python with the user's file:line, and the printed text runs to the same result."""
import os

import pytest
import torch
import torch.nn.functional as F

import compiler
from compiler.executors import TorchExecutor, python_executor
from compiler.core.trace import BASE_CTX

THIS_FILE = os.path.basename(__file__)


def block(x, w, b):
    h = F.layer_norm(x, (x.shape[-1],), w, b)
    h = F.gelu(h @ w.diag()) + torch.softmax(h, -1)
    return h.reshape(-1, 2).sum(0), h.mean()


def _args():
    torch.manual_seed(0)
    return torch.randn(3, 4), torch.randn(4), torch.randn(4)


def _exec_printed(trace, *inputs):
    ns = dict(trace.python_ctx())
    exec(compile(str(trace), "<printed trace>", "exec"), ns)
    return ns[trace.name](*inputs)


def test_every_trace_round_trips_through_its_printed_text():
    jf = compiler.jit(block)
    args = _args()
    expected = block(*args)
    torch.testing.assert_close(jf(*args), expected)
    traces = compiler.last_traces(jf)
    assert len(traces) >= 4  # front end, DCE, CSE, execution
    for tr in traces:
        torch.testing.assert_close(_exec_printed(tr, *args), expected)


def test_trace_names_user_lines_and_ops():
    jf = compiler.jit(block)
    jf(*_args())
    src = str(compiler.last_traces(jf)[-1])
    assert "def computation(t0, t1, t2):" in src
    line = block.__code__.co_firstlineno + 1
    assert f"# {THIS_FILE}:{line} block: h = F.layer_norm(x, (x.shape[-1],), w, b)" in src
    assert "F.layer_norm(t0, (4,), weight=t1, bias=t2, eps=1e-05)" in src
    assert "Tensor.reshape(" in src and "torch.softmax(" in src


def test_ops_record_their_prim_decompositions():
    jf = compiler.jit(lambda x: torch.softmax(x, -1))
    jf(torch.randn(2, 3))
    (bsym,) = compiler.last_traces(jf)[0].bsyms
    names = [s.symbol.name for s in bsym.subsymbols]
    assert names == ["prims.amax", "prims.broadcast_to", "prims.sub", "prims.exp", "prims.sum",
                     "prims.broadcast_to", "prims.div"]
    assert bsym.subsymbols[-1].output is bsym.output  # the decomposition's result is the op's output


@pytest.mark.parametrize("fn", [
    lambda x, w, b: torch.softmax(F.gelu(F.layer_norm(x, (4,), w, b) @ x.transpose(0, 1)), -1).reshape(-1, 3),
    lambda x, w, b: (x + w * 2 - b / 3).abs().sqrt().sum(-1),
    lambda x, w, b: torch.cat([x, x * w], 0).flatten().exp().log1p(),
    lambda x, w, b: F.silu(x).masked_fill(x > 0.5, 1.0) + torch.zeros(3, 4) + F.linear(x, torch.ones(4, 4), b),
])
def test_a_prims_only_executor_runs_decompositions_to_the_same_result(fn):
    args = _args()
    jf = compiler.jit(fn, executors=[TorchExecutor(only_prims=True), python_executor])
    torch.testing.assert_close(jf(*args), fn(*args), rtol=1e-5, atol=1e-5)
    execution = compiler.last_traces(jf)[-1]
    assert all(b.symbol.name.startswith("prims.") for b in execution.bsyms), str(execution)


def test_an_op_no_executor_can_run_is_a_clear_error():
    jf = compiler.jit(lambda x: F.scaled_dot_product_attention(x, x, x),
                      executors=[TorchExecutor(only_prims=True), python_executor])
    with pytest.raises(compiler.ExecutorError, match=r"F.scaled_dot_product_attention.*test_traces.py"):
        jf(torch.randn(1, 2, 3, 4))


def test_constants_without_literals_live_in_the_trace_namespace():
    jf = compiler.jit(lambda x: x.to(torch.float64).new_zeros((2,), dtype=torch.int32) + x.sum().to(torch.int32))
    jf(torch.ones(3))
    tr = compiler.last_traces(jf)[-1]
    assert "torch.int32" in str(tr)
    assert set(BASE_CTX) <= set(tr.python_ctx())


def test_namedtuple_and_return_type_outputs_are_rebuilt_per_call():
    from collections import namedtuple

    Pair = namedtuple("Pair", "low high")

    def fn(x):
        return Pair(x.min(), x.max()), torch.max(x, 0)

    jf = compiler.jit(fn)
    for _ in range(2):
        x = torch.randn(3, 2)
        (pair, mx), (epair, emx) = jf(x), fn(x)
        assert type(pair) is Pair and torch.equal(pair.low, epair.low) and torch.equal(pair.high, epair.high)
        assert type(mx) is type(emx) and torch.equal(mx.values, emx.values) and torch.equal(mx.indices, emx.indices)


def _prim_samples():
    # The differential suite's op samples (written by the test engineer), every 6th: run through prims only.
    import opinfos

    return [s for s in opinfos.SAMPLES[::6] if not s.expect_error and s.manual_seed is None
            and not s.op.startswith("python.")]


@pytest.mark.parametrize("sample", _prim_samples(), ids=lambda s: s.id)
def test_decompositions_compute_what_the_op_computes(sample):
    """Ops with a decomposition, run by an executor that only knows prims, give eager's results."""
    expected = sample.fn(*sample.make_args())
    jf = compiler.jit(sample.fn, executors=[TorchExecutor(only_prims=True), python_executor])
    try:
        got = jf(*sample.make_args())
    except compiler.ExecutorError:
        pytest.skip("an op in this sample has no decomposition into prims")
    low = any(isinstance(t, torch.Tensor) and t.dtype in (torch.bfloat16, torch.float16)
              for t in torch.utils._pytree.tree_leaves(expected))
    tol = dict(rtol=sample.rtol or (2e-2 if low else 1e-5), atol=sample.atol or (2e-2 if low else 1e-5))
    torch.testing.assert_close(got, expected, equal_nan=True, **tol)


@pytest.mark.parametrize("kwargs", [{}, {"beta": 0.5}, {"alpha": 2.0}, {"beta": 0.25, "alpha": -1.5}, {"beta": 0}])
def test_addmm_decomposes_into_a_matmul_and_an_add_that_fuse(kwargs):
    """GPT-2's Conv1D is `torch.addmm(bias, x, w)`: decomposed, it joins its neighbours' region (a fused matmul and
    bias add) instead of splitting the region there; beta=0 stays the op (eager ignores the bias's values but
    gives it a zero gradient, which the decomposition would not)."""
    from compiler.executors.inductor import InductorExecutor

    def f(b, x, w):
        return torch.tanh(torch.addmm(b, x * 2, w, **kwargs)) + 1

    gen = torch.Generator().manual_seed(0)
    b, x, w = (torch.randn(s, generator=gen, dtype=torch.float64, requires_grad=True) for s in ((5,), (3, 4), (4, 5)))
    if kwargs.get("beta") != 0:  # (beta=0 has no decomposition for a prims-only executor to run)
        got = compiler.jit(lambda b, x, w: torch.addmm(b, x, w, **kwargs),
                           executors=[TorchExecutor(only_prims=True), python_executor])(b, x, w)
        torch.testing.assert_close(got, torch.addmm(b, x, w, **kwargs), rtol=1e-12, atol=1e-12)
    jf = compiler.jit(f, executors=(InductorExecutor(backend="aot_eager"), "torch"))
    out = jf(b, x, w)
    grads = torch.autograd.grad(out.sum(), (b, x, w))
    want = torch.autograd.grad(f(b, x, w).sum(), (b, x, w))
    torch.testing.assert_close(out, f(b, x, w))
    torch.testing.assert_close(grads, want)
    names = [s.symbol.name for s in compiler.last_traces(jf)[-1].bsyms]
    assert ("torch.addmm" in names) == (kwargs.get("beta") == 0), names
