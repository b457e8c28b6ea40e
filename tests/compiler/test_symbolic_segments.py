"""Data-dependent reads under cache="symbolic values" (issues 11 and 14).

A number read from a tensor (`int(mask.sum())`, `t.max().item()`, `float(t)`) ends the segment as under
constant values, but the number is a symbolic input of the next segment: every value shares one
continuation, and decisions on it are constraints checked when the continuation is entered. Each case runs
a call sequence against eager and asserts misses/hits and segment counts.
"""
import math

import pytest
import torch

import compiler
from same_values import same as _same

SYM = "symbolic values"


def run(jf, fn, calls):
    for args in calls:
        out, ref = jf(*args), fn(*args)
        assert _same(out, ref), (fn.__name__, args, out, ref)
    return compiler.cache_misses(jf), compiler.cache_hits(jf)


def masks(*counts, size=6):
    return [torch.arange(size) < c for c in counts]


def count_and_max(x, mask):
    n = int(mask.sum())
    k = x.max().item()
    return x * n + k, n, k


def test_numbers_read_are_symbolic_inputs_of_the_next_segment():
    torch.manual_seed(0)
    calls = [(torch.randn(6), m) for m in masks(2, 3, 5, 4, 6)]
    jf = compiler.jit(count_and_max, cache=SYM)
    assert run(jf, count_and_max, calls) == (1, 4)  # five values of n and k: one trace
    assert compiler.last_segment_count(jf) == 3
    final = str(compiler.last_traces(jf)[-1])
    assert "def segment(t0, t2_int, t5_item)" in final  # the numbers read are parameters, not constants
    # constant values: one continuation per value read
    jc = compiler.jit(count_and_max)
    assert run(jc, count_and_max, calls) == (5, 0)


def count_branch(x, mask):
    n = int(mask.sum())
    if n > 3:
        return x[:n] * 2
    return x * n


def test_a_number_read_that_decides_a_branch_traces_each_side_once():
    torch.manual_seed(0)
    calls = [(torch.randn(6), m) for m in masks(4, 5, 1, 2, 6, 0, 3)]
    jf = compiler.jit(count_branch, cache=SYM)
    assert run(jf, count_branch, calls) == (2, 5)  # n > 3 and n <= 3: one continuation each
    header = compiler.last_traces(jf)[-1].header
    assert "entered when t2_int <= 3" in header, header


def test_tensor_sizes_and_numbers_read_stay_symbolic_together():
    torch.manual_seed(0)

    def fn(x, mask):
        n = int(mask.sum())
        return x[:n].sum(0) * n

    calls = [(torch.randn(s, 3), torch.arange(s) < c) for s, c in ((5, 2), (8, 3), (7, 7), (9, 4))]
    jf = compiler.jit(fn, cache=SYM)
    assert run(jf, fn, calls) == (1, 3)


def test_a_number_read_used_as_a_shape_specializes_its_continuation():
    def fn(x, mask):
        n = int(mask.sum())
        return torch.eye(n) + x.sum(), n * 2  # (eye: no shape rule follows its number)

    calls = [(torch.ones(6), m) for m in masks(2, 3, 2, 4, 3)]
    jf = compiler.jit(fn, cache=SYM)
    assert run(jf, fn, calls) == (3, 2)  # n == 2, 3, 4 each a continuation; repeats hit
    assert "t2_int == 3" in compiler.last_traces(jf)[-1].header


def test_float_reads_branches_and_values_kept_constant():
    def fn(x):
        k = float(x.mean())
        if k > 0.5:
            return x - k
        return x + k

    xs = [torch.full((3,), v) for v in (0.75, 0.9, 0.25, float("nan"), 2.0, -1.0, float("nan"))]
    jf = compiler.jit(fn, cache=SYM)
    # k > 0.5, k <= 0.5, nan (a constant: not k <= 0.5 nor k > 0.5 as Python sees it)
    assert run(jf, fn, [(x,) for x in xs]) == (3, 4)


def test_gradients_through_a_symbolic_read():
    def fn(x):
        s = x.detach().abs().max().item()
        return (x / s).pow(2).sum()

    jf = compiler.jit(fn, cache=SYM)
    for scale in (1.0, 3.0, 0.5):
        x1 = (torch.arange(4.0) * scale).requires_grad_()
        x2 = x1.detach().clone().requires_grad_()
        jf(x1).backward()
        fn(x2).backward()
        assert torch.allclose(x1.grad, x2.grad)
    assert (compiler.cache_misses(jf), compiler.cache_hits(jf)) == (1, 2)


def test_reads_in_a_loop_and_a_read_returned():
    def fn(x, steps):
        total = 0
        for _ in range(steps):
            m = x.abs().max().item()
            total = total + m
            x = x / m
        return x, total

    torch.manual_seed(0)
    calls = [(torch.randn(5), 3) for _ in range(4)] + [(torch.randn(5), 2)]
    jf = compiler.jit(fn, cache=SYM)
    assert run(jf, fn, calls) == (2, 3)  # the trip count specializes; the values read do not
    assert compiler.last_segment_count(jf) == 3



def test_continuations_that_need_a_value_no_guard_can_hold_serve_their_call_only():
    def fn(x, n):
        k = x.sum().item()
        if k > 0:
            return x * n, str(-(k - k))  # -0.0: no `==` guard tells it from 0.0
        return x - n, "neg"

    calls = [(torch.full((2,), v), n) for v, n in ((-1.0, 2), (1.0, 2), (2.0, 3), (-3.0, 4))]
    jf = compiler.jit(fn, cache=SYM)
    assert run(jf, fn, calls) == (3, 1)  # k > 0 traces each call (and stays correct); k <= 0 hits


def test_reads_and_symbolic_arguments_in_one_decision():
    def fn(x, n):
        k = int(x.sum())
        if k > n:
            return x * k
        return x - n

    calls = [(torch.tensor([1, 1]), 1), (torch.tensor([1, 2]), 1), (torch.tensor([1, 2]), 5), (torch.tensor([3, 4]), 2),
             (torch.tensor([0, 1]), 3)]
    jf = compiler.jit(fn, cache=SYM)
    assert run(jf, fn, calls) == (2, 3)  # k > n and k <= n, whatever the values


def test_value_dependent_sizes_read_are_symbolic_inputs_of_the_next_segment():
    def nonzero_count(x):
        idx = torch.nonzero(x > 0)
        if len(idx) > 3:
            return idx.sum(0)
        return idx.float().mean(0) * len(idx)

    xs = [[1., -1, 2, 3, 4, 5], [1., -1, 2, 3, -4, 5], [1., -1, 2, 3, 4, 5, 6], [1., -1, 2, -3, -4, 5],
          [1., 2, 3, 4, 5, 6, 7, 8]]
    calls = [(torch.tensor(x),) for x in xs]
    assert run(compiler.jit(nonzero_count, cache=SYM), nonzero_count, calls) == (2, 3)  # len(idx) > 3 or not
    assert run(compiler.jit(nonzero_count), nonzero_count, calls) == (5, 0)  # one continuation per size


def test_masked_rows_sizes_and_the_sizes_0_and_1():
    def fn(x, mask):
        sel = x[mask]
        n = sel.shape[0]
        return sel * 2 / n, n, sel.reshape(n, -1).sum(1)

    jf = compiler.jit(fn, cache=SYM)
    torch.manual_seed(0)
    assert run(jf, fn, [(torch.randn(8, 3), torch.arange(8) < k) for k in (3, 5, 2, 8)]) == (1, 3)
    assert run(jf, fn, [(torch.randn(8, 3), torch.arange(8) < k) for k in (1, 4, 1)]) == (2, 5)  # 1 specializes
    with pytest.raises(RuntimeError, match="cannot reshape tensor of 0 elements"):  # as eager
        jf(torch.randn(8, 3), torch.arange(8) < 0)

# ---- symbolic values with a fusing executor: traces specialize, fusion regions serve every size ----

def _unique_graphs():
    from torch._dynamo.utils import counters

    return counters["stats"]["unique_graphs"]


def scaled(a, b, n):
    return (a * n + b.sin()).sum(0) + a.exp().sum(0)


def test_fusing_executor_compiles_a_region_once_for_many_sizes():
    torch.manual_seed(0)
    jf = compiler.jit(scaled, cache=SYM, executors=("inductor", "torch"))
    before = _unique_graphs()
    for shape in ((3, 4), (5, 6), (3, 4)):
        a, b = torch.randn(*shape), torch.randn(*shape)
        assert torch.allclose(jf(a, b, 2), scaled(a, b, 2), rtol=1e-5, atol=1e-5)
    # each new size is its own trace (specialized: fused prims bake sizes and numbers)...
    assert (compiler.cache_misses(jf), compiler.cache_hits(jf)) == (2, 1)
    assert "specialized to the call's sizes" in compiler.last_traces(jf)[-1].header
    # ...but the region's code is the same for every size: one dynamic-shape compile serves them all
    assert _unique_graphs() - before == 1


def test_regions_per_size_under_constant_values_one_under_symbolic_values():
    from compiler.executors import inductor

    backend = inductor.InductorExecutor(backend="aot_eager")
    made = []
    for cache in ("constant values", SYM):
        jf = compiler.jit(scaled, cache=cache, executors=(backend, "torch"))
        before = len(inductor._COMPILED)
        for shape in ((4, 5), (6, 5), (7, 2)):
            a, b = torch.randn(*shape), torch.randn(*shape)
            assert torch.allclose(jf(a, b, 3), scaled(a, b, 3), rtol=1e-6, atol=1e-6)
        made.append(len(inductor._COMPILED) - before)
    assert made == [3, 1]


def test_fusing_executor_with_symbolic_values_matches_eager_for_numbers_shapes_and_branches():
    from compiler.executors.inductor import InductorExecutor

    def fn(x, n, scale):
        if x.shape[0] > 4:
            x = x.reshape(-1, x.shape[-1]).t()
        y = torch.cat([x] * n, 0) * scale
        return y.relu().sum(-1), max(n, 3) * x.mean()

    jf = compiler.jit(fn, cache=SYM, executors=(InductorExecutor(backend="aot_eager"), "torch"))
    torch.manual_seed(0)
    calls = [(torch.randn(3, 5), 2, 0.5), (torch.randn(6, 5), 2, 0.5), (torch.randn(3, 5), 4, 1.5),
             (torch.randn(8, 2), 1, -2.0), (torch.randn(3, 5), 2, 0.5)]
    for args in calls:
        out, ref = jf(*args), fn(*args)
        assert all(torch.allclose(o, r, rtol=1e-6, atol=1e-6) for o, r in zip(out, ref)), args
    assert (compiler.cache_misses(jf), compiler.cache_hits(jf)) == (4, 1)
