"""The functional (fused) path through nvFuser on a CUDA device, judged as the CPU suite judges aot_eager's:
lightning-thunder's ported in-place, aliasing and functionalization programs with issue 23's (tests/compiler/
test_inplace_ported.py) and a shard of the random aliasing programs (aliasing_programs.py), jitted with
`executors=("nvfuser", "torch")` against eager on the same device: values, inputs left behind, which outputs
and inputs share memory, views, gradients, what a later write into an output changes. Each must equal eager,
or be refused with a clear error, or run in eager order (the trace header says why).

Inputs hold the CPU suite's values (drawn on the CPU, then put on the device with their layouts and the memory
they share), so a random program's masks and branches are the ones eager ran without error on the CPU: an
index out of range would be a device-side assert on CUDA, fatal to the process. CPU CI skips this file.
"""
from __future__ import annotations

import pytest
import torch
from cuda_tier import EXECUTORS, skip_without_cuda_and_nvfuser

skip_without_cuda_and_nvfuser()

import aliasing_programs as ap
import test_inplace_ported as ported

from compiler.executors import nvfuser

SEEDS = list(range(0, 6000, 20))  # 300 random aliasing programs (the CPU shard: 120 of them, every 25th)


@pytest.fixture(autouse=True)
def on_cuda():
    with torch.device("cuda"):
        yield


def _assert_as_eager(outcome, what):
    assert outcome.kind in ("same", "eager error", "refused"), f"{outcome.kind}: {outcome.detail}\n{what}"


@pytest.mark.parametrize("name", list(ported.CASES))
def test_ported_program_through_nvfuser(name):
    outcome = ap.check_program(ported.CASES[name], EXECUTORS)
    assert outcome.kind == "same", f"{outcome.kind}: {outcome.detail}"


@pytest.mark.parametrize("name", ported.SYMBOLIC)
def test_ported_program_through_nvfuser_under_symbolic_values(name):
    outcome = ap.check_program(ported.CASES[name], EXECUTORS, cache="symbolic values", calls=3)
    assert outcome.kind == "same", f"{outcome.kind}: {outcome.detail}"


@pytest.mark.parametrize("seed", SEEDS)
def test_aliasing_program_through_nvfuser(seed):
    with torch.device("cpu"):  # (drawn and validated by eager on the CPU)
        program = ap.random_program(seed)
    _assert_as_eager(ap.check_program(program, EXECUTORS), program.source)


def test_the_functional_programs_run_on_nvfuser():
    """The cases above are judged on nvFuser's kernels, not only on eager-order fallbacks: a written view of an
    intermediate and a written argument run as nvFuser regions, with their write-backs."""
    before = nvfuser.statistics()["executed"].get("forward", 0)
    for name in ("inplace_to_views.f", "multiple_inplace_to_args.f"):
        outcome = ap.check_program(ported.CASES[name], EXECUTORS)
        assert outcome.kind == "same" and not outcome.fallback, (name, outcome)
    assert nvfuser.statistics()["executed"].get("forward", 0) >= before + 4  # (2 cases x 2 calls at least)
