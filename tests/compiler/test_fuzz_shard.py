"""A fixed-seed shard of the differential fuzzer (fuzz_programs.py; long runs: bench/fuzz.py): random programs
with views, in-place ops on arguments and views, aliased arguments, data-dependent branches, loops, module
state changed between calls and every return shape, each in one cache mode (the modes take turns), every
call against eager. A refusal is allowed; a silently different result or a crash is not. The harness's own
checks are tested too (a comparison that cannot fail would make the shard meaningless)."""
from __future__ import annotations

import pytest
import torch

import compiler
import fuzz_programs as fp

SHARD = range(150)


@pytest.mark.parametrize("seed", SHARD)
def test_random_program_matches_eager(seed):
    program = fp.random_program(seed)
    mode = fp.MODES[seed % len(fp.MODES)]
    verdict = fp.check(program, mode)
    assert verdict, f"{verdict.status} [{mode}] {verdict.detail}\n{fp.describe(program)}"


def test_programs_are_deterministic_and_varied():
    assert fp.random_program(3).source == fp.random_program(3).source
    sources = [fp.random_program(s).source for s in SHARD]
    assert len(set(sources)) == len(sources)
    joined = "\n".join(sources)
    for construct in ("if ", "for ", "try:", ".item()", "LOG.", "NET", "_(", "raise ", "[", "@"):
        assert joined.count(construct) >= 5, f"the shard hardly uses {construct!r}"
    assert joined.count("return None") + joined.count("    return\n") >= 5, "the shard hardly returns None"
    aliased = sum(any(a.of is not None for a in fp.random_program(s).args) for s in SHARD)
    assert aliased >= 20, "too few programs with aliased arguments"


@pytest.mark.parametrize("bug", ["drops a write to an argument", "returns () for None", "leaves a proxy",
                                 "ignores a change between calls"])
def test_the_harness_notices_a_wrong_compiler(monkeypatch, bug):
    """A stand-in compiler with one known bug: the check must call it wrong."""
    program = fp.Program(0, [fp.Arg(("A",))], [(0, "a0.add_(1)"), (0, "LOG.append(a0 * 2)"),
                                               (0, "return None if THRESHOLD < 1 else a0.sum()")],
                         first_sizes={"A": 3, "B": 2, "C": 2}, mutations=((1, "THRESHOLD = THRESHOLD + 5"),))
    assert fp.check(program, "constant values"), "the honest compiler must pass this program"
    real_jit = compiler.jit

    def buggy_jit(fn, **options):
        jfn = real_jit(fn, **options)
        state = {"first": None}

        def call(*args):
            if bug == "drops a write to an argument":
                args = (args[0].clone(),) + args[1:]
            out = jfn(*args)
            if bug == "returns () for None" and out is None:
                return ()
            if bug == "leaves a proxy":
                fn.__globals__["LOG"].append(compiler.core.proxies.TensorProxy("t9", torch.empty(1, device="meta"),
                                                                             torch.device("cpu")))
            if bug == "ignores a change between calls":
                state["first"] = out if state["first"] is None else state["first"]
                return state["first"]
            return out
        return call

    monkeypatch.setattr(compiler, "jit", buggy_jit)
    verdict = fp.check(program, "constant values")
    assert verdict.status == "wrong", f"the harness missed: {bug}"


def test_minimization_keeps_the_failure_and_drops_the_rest(monkeypatch):
    program = fp.Program(1, [fp.Arg(("A", "B"))], [(0, "v1 = a0.sin()"), (0, "v2 = v1 * 2"), (0, "a0.mul_(3)"),
                                                   (0, "return v2")], first_sizes={"A": 3, "B": 2, "C": 2})
    real_jit = compiler.jit

    def drops_mul_(fn, **options):  # a compiler that forgets in-place multiplications of arguments
        jfn = real_jit(fn, **options)
        return lambda *args: jfn(*((args[0].clone(),) + args[1:]))

    monkeypatch.setattr(compiler, "jit", drops_mul_)
    verdict = fp.check(program, "constant values")
    assert verdict.status == "wrong"
    small = fp.minimize(program, verdict)
    assert [text for _, text in small.lines] == ["a0.mul_(3)"], small.lines
