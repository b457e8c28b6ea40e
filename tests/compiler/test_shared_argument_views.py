"""Arguments that view one base, inside try/except while autograd records: their meta tensors view one meta base as
the real arguments do (compiler/meta/functions.py shared_metas), so autograd's in-place checks raise while tracing
where eager's raise (a view of a leaf that requires grad written in place, a write into one output of unbind/split,
a multi-output view read after its base was written) and the trace takes the `except` branch eager takes. The
prologue guards which arguments view one base and where, so a call with other sharing traces again.
Before: refused ("runs inside a try/except on arguments that share memory and require grad"), the largest refusal
class of bench/fuzz.py.
"""
from __future__ import annotations

import pytest
import torch

import compiler
import fuzz_programs as fp

MODES = ["constant values", "symbolic values", "no caching"]


def write_first(a, b):
    try:
        a.mul_(2)
        r = b + 1
    except RuntimeError:
        r = b - 1
    return r


def write_second(a, b):
    try:
        b[0] = 5.0
    except RuntimeError:
        return a * 3
    return a + b.sum()


def _arguments(kind, seed):
    leaf = torch.randn(4, 3, generator=torch.Generator().manual_seed(seed)).requires_grad_()
    if kind == "view of a leaf":
        return leaf[1:], leaf  # (eager: a.mul_ raises, a view of a leaf that requires grad)
    base = leaf.clone()
    if kind == "unbind":
        return base.unbind(0)[0], base  # (eager: a.mul_ raises; after b[0] = ..., reading a raises)
    if kind == "windows":
        return base[:-1], base[1:]  # (eager: runs; the write through a reaches b)
    if kind == "transposed":
        return base, base.t()
    if kind == "split":
        return base.split(2)[0], base.split(2)[1]
    return base[:-1].clone(), base[1:].clone()  # (no sharing)


def _outcome(fn, args):
    try:
        return fn(*args), None
    except RuntimeError as e:
        return None, type(e)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["view of a leaf", "unbind", "windows", "transposed", "split"])
@pytest.mark.parametrize("fn", [write_first, write_second])
def test_try_except_over_arguments_viewing_one_base(fn, kind, mode):
    jfn = compiler.jit(fn, cache=mode)
    for call in range(3):
        eager_args, args = _arguments(kind, call), _arguments(kind, call)
        expected, eager_error = _outcome(fn, eager_args)
        actual, error = _outcome(jfn, args)  # (a refusal is a CompilerError: not caught here, it fails the test)
        assert error is eager_error, f"call {call}: {error}, eager's {eager_error}"
        if eager_error is None:
            torch.testing.assert_close(actual, expected)
            assert actual.requires_grad == expected.requires_grad
        for a, e in zip(args, eager_args):
            torch.testing.assert_close(a.detach(), e.detach())


@pytest.mark.parametrize("mode", MODES)
def test_other_sharing_traces_again(mode):
    """A trace made for arguments viewing one base serves no call whose arguments share nothing, nor the reverse."""
    jfn = compiler.jit(write_first, cache=mode)
    for call, kind in enumerate(["view of a leaf", "separate", "view of a leaf", "unbind", "separate"]):
        eager_args, args = _arguments(kind, call), _arguments(kind, call)
        expected, eager_error = _outcome(write_first, eager_args)
        actual, error = _outcome(jfn, args)
        assert error is eager_error, f"call {call} ({kind})"
        torch.testing.assert_close(actual, expected)
        torch.testing.assert_close(args[1].detach(), eager_args[1].detach())
    if mode == "constant values":
        assert compiler.cache_misses(jfn) == 3 and compiler.cache_hits(jfn) == 2


# bench/fuzz.py seeds (0..2999) that were refused for this reason in constant values mode
FUZZ_SEEDS = [163, 467, 534, 596, 1454, 1550, 1687, 1992, 1996, 2238, 2241]


@pytest.mark.parametrize("executors", [None, ("inductor", "torch")], ids=["default", "inductor"])
@pytest.mark.parametrize("seed", FUZZ_SEEDS[::3])
def test_fuzz_programs_of_the_class(seed, executors):
    program = fp.random_program(seed)
    for mode in MODES:
        verdict = fp.check(program, mode, executors)
        assert verdict.status == "ok", f"[{mode}] {verdict.status}: {verdict.detail}\n{fp.describe(program)}"
