"""Symbolic values with a fusing executor: ONE trace serves many sizes and numbers, and fusion regions take
the numbers as inputs, so one region compile serves them too (compiler/runtime/cache.py _FusedPerCall,
executors/inductor.py _numbers_as_inputs).

Breadth uses the aot_eager backend (the same graph capture, no C++ code generation); one case runs real
inductor (tests/compiler/test_symbolic_segments.py).
"""
import pytest
import torch
import torch.nn.functional as F

import compiler
from compiler.executors import inductor
from compiler.executors.inductor import InductorExecutor

import test_gpt_model as gpt

SYM = "symbolic values"
AOT = InductorExecutor(backend="aot_eager")


def counts(jf):
    return compiler.cache_misses(jf), compiler.cache_hits(jf)


def _regions_made(run) -> list:
    """The region sources compiled while `run()` runs."""
    before = set(inductor._COMPILED)
    run()
    return [k[3] for k in inductor._COMPILED if k not in before]


def _fused(jf):
    """Region calls in the execution trace of the nested, per-call plan (the fused form)."""
    plans = compiler._jitted(jf).last_entry.computation.plans
    return str(compiler.last_traces(plans)[-1]).count("fusion_")


def test_a_number_in_region_arithmetic_is_a_region_input():
    def fn(a, n, s):
        return ((a * n + s) / (n + 1)).relu().sum(-1) * s

    jf = compiler.jit(fn, cache=SYM, executors=(AOT, "torch"))
    calls = [(torch.randn(3, 4), 2, 0.5), (torch.randn(5, 6), 3, 1.5), (torch.randn(2, 7), 7, -2.0),
             (torch.randn(3, 4), 5, 0.25)]

    def run():
        for args in calls:
            assert torch.allclose(jf(*args), fn(*args), rtol=1e-6, atol=1e-6), args

    made = _regions_made(run)
    assert len(made) == 1, made  # every size and number: the same region code
    assert "prims.mul(t0, number0)" in made[0] and "number0" in made[0].splitlines()[0], made[0]
    assert counts(jf) == (1, 3)
    assert _fused(jf) == 1


def test_without_numbers_as_inputs_each_number_compiles_its_region(monkeypatch):
    """The region count above can fail: with number operands kept as literals, each value is new code."""
    monkeypatch.setattr(inductor, "_NUMBER_OPERANDS", frozenset())

    def fn(a, n):
        return (a * n).sum(-1)

    jf = compiler.jit(fn, cache=SYM, executors=(AOT, "torch"))

    def run():
        for n in (2, 3, 4):
            a = torch.randn(3, n + 1)
            assert torch.allclose(jf(a, n), fn(a, n))

    assert len(_regions_made(run)) == 3
    assert counts(jf) == (1, 2)


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 8), torch.nn.ReLU())


def test_mlp_at_several_batch_sizes_with_gradients():
    model = _mlp()
    jm = compiler.jit(model, cache=SYM, executors=(AOT, "torch"))
    for b in (2, 5, 9):
        x = torch.randn(b, 7, 8)
        out, ref = jm(x), model(x)
        assert torch.allclose(out, ref, rtol=1e-5, atol=1e-6), b
        out.sum().backward()  # parameters require grad: the regions run under autograd
    assert counts(jm) == (1, 2)
    assert _fused(jm) >= 1


def test_gpt_at_several_sequence_lengths_is_one_trace():
    model = gpt.make_model(torch.float32)
    jm = compiler.jit(model, cache=SYM, executors=(AOT, "torch"))
    made = []
    with torch.no_grad():
        for seq in (5, 9, 16):
            idx = gpt.tokens(seq, seed=seq)
            made.append(len(_regions_made(lambda: jm(idx))))
            assert torch.allclose(jm(idx), model(idx), **gpt.TOLERANCES[torch.float32]), seq
    assert counts(jm) == (1, 5)
    # sizes given to broadcasts and reshapes are region inputs too: other lengths compile no new region
    assert made[0] >= 2 and made[1:] == [0, 0], made
    assert _fused(jm) >= 2
    assert "serves every size" in compiler.last_traces(jm)[-1].header


def test_decisions_still_guard_with_a_fusing_executor():
    def fn(x, n, scale):
        if x.shape[0] > 4:
            x = x.reshape(-1, x.shape[-1]).t()
        y = F.pad(x, (0, n)) * scale
        return y.relu().sum(-1), max(n, 3) * x.mean()

    jf = compiler.jit(fn, cache=SYM, executors=(AOT, "torch"))
    torch.manual_seed(0)
    calls = [(torch.randn(3, 5), 2, 0.5), (torch.randn(6, 5), 2, 0.5), (torch.randn(3, 5), 4, 1.5),
             (torch.randn(8, 2), 1, -2.0), (torch.randn(2, 6), 3, 0.5), (torch.randn(7, 3), 5, 1.0)]
    for args in calls:
        out, ref = jf(*args), fn(*args)
        assert all(torch.allclose(o, r, rtol=1e-6, atol=1e-6) for o, r in zip(out, ref)), args
    # traces: (x.shape[0] > 4) x (n >= 3) x (n == 1: specialized) -> (3,5,2) (6,5,2) (3,5,4) (8,2,1) ...
    assert counts(jf) == (4, 2)


def test_the_plan_traces_tensor_dunders_of_arguments_sharing_memory():
    # Found by bench/fuzz.py --executors inductor,torch (seed 432387). The per-call plan traces the trace's
    # `Tensor.__pow__(t0, 2)`, which torch wraps in `try: ... except TypeError:`. That counted as a try/except of
    # the program's, so arguments sharing memory while requiring grad refused the plan; the refusal, raised
    # inside the `with` block of torch's handle_torch_function, skipped that block's exit, which pushes the
    # tracing mode back: "trying to pop from empty mode stack", and torch calls after it were traced.
    def fn(a0, a1, a2, n):
        return (a0 ** 2 + a1) * n + a2.sum()

    def make():
        a0 = torch.arange(10.0, dtype=torch.float64).reshape(2, 5).requires_grad_() * 1
        return a0, torch.tensor(0.5, requires_grad=True) * 1, a0[1:], 3

    jf = compiler.jit(fn, cache=SYM, executors=(AOT, "torch"))
    for _ in range(2):
        expected, got = fn(*make()), jf(*make())
        torch.testing.assert_close(got, expected)
        assert torch._C._len_torch_function_stack() == 0
    assert _fused(jf) >= 1  # the plan was traced and fused, not refused


def test_an_expanded_region_output_keeps_eagers_layout():
    """A shape-generic region returning a broadcast (stride 0) that later ops read: its outputs are put back in the
    traced dimension order, and an expanded output stays expanded (a dense copy ordered with the stride-0 dimension
    innermost gave the next op's result strides (1, 8, 2) where eager's are (12, 4, 1); aliasing_fuzz seed
    133215)."""
    def fn(a):
        v = a.abs() + 1
        a.reshape(-1).abs_()
        return v[1:] + a

    jf = compiler.jit(fn, executors=(AOT, "torch"), cache=SYM)
    for shape in ((2, 3, 4), (2, 5, 3)):
        a = torch.arange(torch.Size(shape).numel()).reshape(shape) - 5
        out, want = jf(a.clone()), fn(a.clone())
        assert _fused(jf) == 1
        assert torch.equal(out, want) and out.stride() == want.stride(), (out.stride(), want.stride())
