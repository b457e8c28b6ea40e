"""Random aliasing programs and torch's OpInfo in-place variants through the functional (fused) path.

A fixed shard of tests/compiler/aliasing_programs.py's programs (in-place ops, out=, views of inputs and of
intermediates returned, expanded/sliced/overlapping inputs, tensors that require grad) jitted with
executors=(aot_eager, "torch") and with cache="symbolic values", and a few through real inductor; the
in-place variants of every 4th OpInfo op that has one. Each must equal eager (values, inputs left behind,
memory shared among outputs and inputs, views, gradients, what a later write into an output changes) or run
in eager order. bench/aliasing_fuzz.py runs thousands of programs, bench/opinfo_coverage.py --inplace-only
--executor aot_eager every in-place variant.
"""
from __future__ import annotations

import warnings

import pytest
import torch

import aliasing_programs as ap
import compiler
import opinfo_db as db
from compiler.executors.inductor import InductorExecutor

AOT_EAGER = InductorExecutor(backend="aot_eager")
FUNCTIONAL = (AOT_EAGER, "torch")

SEEDS = list(range(0, 3000, 25))  # 120 programs of the 5,000 the bench runs


def _check(seed, executors, cache="constant values"):
    program = ap.random_program(seed)
    outcome = ap.check_program(program, executors, cache=cache)
    assert outcome.kind in ("same", "eager error", "refused"), f"{outcome.kind}: {outcome.detail}\n{program.source}"


@pytest.mark.parametrize("seed", SEEDS)
def test_aliasing_program_through_the_functional_path(seed):
    _check(seed, FUNCTIONAL)


# bench/aliasing_fuzz.py seeds that raised autograd's or the real kernel's error where eager runs, on both paths:
# 74213 copies an expanded argument's detach() onto the same memory (eager skips a copy onto the same data; the
# real-kernel check's rebuild gave the detached tensor memory of its own, so its overlap check refused); the
# others meet autograd checks on view history that starts before the function (an argument that is a view):
# refused with that reason, not eager's error.
# 80122 (this session's second run) copies a tensor onto another view of the same memory where one of them is a
# non-leaf (the rebuild gives a non-leaf memory of its own); 82706, 83546, 83917 meet autograd's out= check on a
# view made before its argument's requires_grad_(). 77815's arguments view one base (the meta tensors view one
# meta base as they do, meta/functions.py shared_metas): eager's answer, no refusal.
@pytest.mark.parametrize("seed, expected", [(74213, "same"), (74172, "refused"), (77815, "same"),
                                            (78307, "refused"), (80122, "same"), (82706, "refused"),
                                            (83546, "refused"), (83917, "refused")])
@pytest.mark.parametrize("executors", [None, FUNCTIONAL], ids=["default", "functional"])
def test_aliasing_programs_that_raised_where_eager_runs(seed, expected, executors):
    program = ap.random_program(seed)
    outcome = ap.check_program(program, executors)
    assert outcome.kind == expected, f"{outcome.kind}: {outcome.detail}\n{program.source}"
    if expected == "refused":
        assert "view history" in outcome.detail


@pytest.mark.parametrize("seed", SEEDS[::6])
def test_aliasing_program_under_symbolic_values(seed):
    _check(seed, FUNCTIONAL, cache="symbolic values")


@pytest.mark.parametrize("seed", [25, 250, 1000])
def test_aliasing_program_through_inductor(seed):
    _check(seed, ("inductor", "torch"))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("cache", ["constant values", "symbolic values"])
def test_region_outputs_that_depend_on_no_input_are_new_tensors_on_every_call(backend, cache):
    # Found by bench/aliasing_fuzz.py (seed 72663, below). FX's symbolic tracing computes ops none of whose
    # arguments depend on the region's inputs once, while tracing, and keeps the result as a graph constant:
    # every call returned that one tensor, so a write into the first call's result (or an out= into it inside
    # the function) changed what later calls returned.
    def fn(x):
        return torch.zeros(3) * 2 + 1, x.sin() * 3

    jf = compiler.jit(fn, cache=cache, executors=(InductorExecutor(backend=backend), "torch"))
    first, _ = jf(torch.ones(3))
    first.add_(5)
    again, y = jf(torch.ones(3))
    torch.testing.assert_close(again, torch.ones(3))
    torch.testing.assert_close(y, torch.ones(3).sin() * 3)
    assert again.data_ptr() != first.data_ptr()


def test_an_out_write_into_a_region_result_made_from_no_input():
    _check(72663, FUNCTIONAL)  # a1.zero_(); torch.add(a1, a0, out=a1): the zeros were the same tensor each call


def test_the_generator_makes_programs_that_matter():
    """Deterministic, varied, and about memory: writes into inputs and views, out=, shared inputs, grads."""
    assert ap.random_program(7).source == ap.random_program(7).source
    programs = [ap.random_program(s) for s in SEEDS]
    sources = [p.source for p in programs]
    assert len(set(sources)) > len(sources) * 0.95
    assert sum("out=" in s for s in sources) > 10
    assert sum("_(" in s or "] =" in s or "+=" in s for s in sources) > 60  # in-place writes
    assert sum(any(isinstance(x, ap.Alias) for x in p.specs) for p in programs) > 20  # inputs sharing memory
    assert sum(any(getattr(x, "layout", "") == "expanded" for x in p.specs) for p in programs) > 20
    assert sum(any(getattr(x, "grad", None) for x in p.specs) for p in programs) > 20


def test_the_comparison_catches_lost_aliasing():
    """A result with eager's values but not eager's memory (a copy where eager returns a view, a write that
    misses an input) is reported, not accepted."""
    x = torch.randn(2, 3)
    c = x.exp()
    e = c.view(-1)
    with pytest.raises(ap.Different, match="shares|base"):
        ap.compare((c, e), [x], (c.clone(), e.clone()), [x.clone()])
    with pytest.raises(ap.Different, match="after a write into output 0"):
        ap.probe_writes((c.clone(), e.clone()), [x.clone()], (c, e), [x])
    y = x.clone()
    y.add_(1)
    with pytest.raises(ap.Different, match="input 0 after the call"):
        ap.compare(None, [x.clone()], None, [y])


# ---- OpInfo in-place variants ----

INPLACE_OPS = [op for op in db.ops_for(torch.float32) if op.inplace_variant is not None][::4]


@pytest.mark.parametrize("op", INPLACE_OPS, ids=[db.op_id(op) for op in INPLACE_OPS])
def test_opinfo_inplace_variant_through_the_functional_path(op, monkeypatch):
    monkeypatch.setattr(db, "EXECUTORS", FUNCTIONAL)
    tally = db.Tally()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        db.run_op(op, torch.float32, tally, per_op=2, chain=False, forward=False)
    bad = [r for r in tally.results if r.outcome in (db.CRASH, db.WRONG)]
    assert not bad, "\n".join(f"{r.outcome}: {r.key}: {r.reason}" for r in bad)


def test_a_returned_view_of_a_returned_view_of_a_written_input():
    # Found by bench/aliasing_fuzz.py (seed 74288): `v0 = a0.detach(); v2 = v0.mul_(2).t(); return v0, v0, v2`:
    # eager's v2 is a view of v0; the functional trace took both again from the input separately (two detaches),
    # so v2's base was another tensor and a later write into v0 was not seen through v2's base
    _check(74288, FUNCTIONAL)

    def fn(a0):
        v0 = a0.detach()
        v2 = v0.mul_(2).t()
        torch.exp(v0, out=v0)
        return v2, v0  # (the view first: bases are taken again before views of them)

    out = compiler.jit(fn, executors=FUNCTIONAL)(torch.randn(3, 4).t())
    assert out[0]._base is out[1]


def test_a_masked_selection_of_a_tensor_requiring_grad_requires_grad():
    # Found by bench/aliasing_fuzz.py (seed 77794): x[mask]'s metadata (a value-dependent size) did not require
    # grad, so the fused path returned `v0` written under no_grad as a tensor without autograd history
    _check(77794, FUNCTIONAL)

    def fn(a0):
        v0 = a0[a0 > 0]
        with torch.no_grad():
            v0[0] = 0
        return v0 * 2, torch.masked_select(a0, a0 < 0)

    a0 = torch.arange(-3.0, 9.0).reshape(3, 4)[:, ::2].requires_grad_()
    for executors in (FUNCTIONAL, None):
        out = compiler.jit(fn, executors=executors)(a0)
        assert all(o.requires_grad and o.grad_fn is not None for o in out), executors


# bench/aliasing_fuzz.py seeds of this session's new range that differed: 130680 (a write after a data-dependent
# branch into what a region's VJP kept: test_writes_after_saved_reads.py), 133215 under symbolic values (an
# expanded region output copied densely in a stride-0-first order: test_symbolic_fusion.py), 137695 (a segment
# ending inside no_grad: test_segment_fusion.py), 137198 (a matmul returned as a view) and 139633 (a no_grad
# write of a value with autograd history): below; 144246 (a write into tanh's result, which eager saves:
# test_writes_after_saved_reads.py)
@pytest.mark.parametrize("seed, cache", [(130680, "constant values"), (133215, "symbolic values"),
                                         (137695, "constant values"), (137198, "constant values"),
                                         (139633, "constant values"), (144246, "constant values")])
def test_aliasing_programs_found_by_the_new_seed_range(seed, cache):
    _check(seed, FUNCTIONAL, cache=cache)


def test_a_region_result_eager_makes_as_its_own_tensor_is_no_view():
    """aot_eager returns a batched matmul as a view of its bmm buffer; eager's `a @ b` is a tensor of its own, so a
    view taken of it later (in the next segment, after a data-dependent branch) has it as base (aliasing_fuzz seed
    137198: `v0.resize_(..)` then `v0.mul_(2).t()` had another base than the returned v0)."""
    def fn(a, b):
        v0 = a @ a.mT
        if b.sum() > 0:
            b.mul_(2)
        return v0.transpose(1, 2), v0, v0 + 1

    jf = compiler.jit(fn, executors=FUNCTIONAL)
    for sign in (1.0, -1.0):
        a = torch.randn(4, 3, 2, dtype=torch.float64)
        got, want = jf(a, torch.full((2,), sign)), fn(a, torch.full((2,), sign))
        assert got[0]._base is got[1] and want[0]._base is want[1]
        assert not got[1]._is_view() and not want[1]._is_view()
        torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("read", ["view", "whole", "returned"])
def test_a_write_under_no_grad_of_a_value_with_autograd_history_leaves_none(read):
    """`with no_grad: a.copy_(b)` where b requires grad and a does not: eager's a holds b's values without autograd
    history. The functional trace took b itself as a's new value, so ops on a with grad enabled were differentiable
    and the write-back (in grad mode) gave the caller's a a grad_fn (aliasing_fuzz seed 139633)."""
    def fn(a, b):
        with torch.no_grad():
            a.copy_(b)
        if read == "view":
            v = a.transpose(0, -1)
            v[v < 0] *= -1
            return a
        if read == "whole":
            return a * 2, a
        t = torch.zeros(3, 3)
        with torch.no_grad():
            t.add_(b)
        return t

    jf = compiler.jit(fn, executors=FUNCTIONAL)
    for _ in range(2):
        b = torch.randn(3, 3, requires_grad=True) * 1
        a_got, a_want = torch.zeros(3, 3), torch.zeros(3, 3)
        got, want = jf(a_got, b), fn(a_want, b)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert (g.requires_grad, g.is_leaf) == (w.requires_grad, w.is_leaf) == (False, True)
            torch.testing.assert_close(g, w, rtol=0, atol=0)
        assert not a_got.requires_grad and a_got.grad_fn is None
        torch.testing.assert_close(a_got, a_want, rtol=0, atol=0)
