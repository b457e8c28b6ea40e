"""The executors compiler.jit uses when `executors=` is not given: nvFuser first for calls with CUDA inputs
where nvfuser_direct imports, torch for everything else. The choice is checked on CPU; the CUDA run is in
test_nvfuser_executor.py (nvFuser venv) and here (skipped where CUDA is absent)."""
from __future__ import annotations

import sys

import pytest
import torch

import compiler
from compiler.runtime.cache import input_device_types
from compiler.executors import (DEFAULT_EXECUTORS, default_executors, nvfuser_unavailable, python_executor,
                                torch_executor)


def _never_called():
    raise AssertionError("a call without CUDA inputs must not check (or import) nvFuser")


@pytest.mark.parametrize("devices", [set(), {"cpu"}, {"meta"}, {"cpu", "meta"}])
def test_calls_without_cuda_inputs_use_torch_without_looking_for_nvfuser(devices):
    assert default_executors(devices, _never_called) is DEFAULT_EXECUTORS
    assert [e.name for e in DEFAULT_EXECUTORS] == ["torch", "python"]


@pytest.mark.parametrize("devices", [{"cuda"}, {"cuda", "cpu"}])
def test_cuda_inputs_put_nvfuser_first_when_it_is_available(devices):
    chosen = default_executors(devices, lambda: None)
    assert [e.name for e in chosen] == ["nvfuser", "torch", "python"]
    assert chosen[1] is torch_executor and chosen[2] is python_executor
    assert getattr(chosen[0], "fuses", False)  # so plan_execution takes the functional, fused path


def test_cuda_inputs_stay_on_torch_when_nvfuser_is_not_available():
    assert default_executors({"cuda"}, lambda: "nvfuser_direct does not import") is DEFAULT_EXECUTORS


def test_this_machine_reports_why_nvfuser_is_not_the_default():
    reason = nvfuser_unavailable()
    if torch.cuda.is_available() and "nvfuser_direct" in sys.modules:
        assert reason is None
    else:
        assert reason  # "no CUDA device" or the import failure
        assert default_executors({"cuda"}) is DEFAULT_EXECUTORS


def test_device_types_come_from_nested_arguments_and_module_state():
    x, m = torch.ones(2), torch.empty(3, device="meta")
    assert input_device_types((x, [1, {"k": m}]), {}) == {"cpu", "meta"}
    assert input_device_types((), {"x": (x,)}) == {"cpu"}
    assert input_device_types((1, "a"), {}) == set()
    lin = torch.nn.Linear(2, 2, device="meta")
    lin.register_buffer("b", torch.zeros(1))
    assert input_device_types((), {}, lin) == {"meta", "cpu"}


def test_a_cpu_call_never_imports_nvfuser_even_when_it_is_broken(monkeypatch):
    # None in sys.modules makes `import nvfuser_direct` raise ImportError: a CPU call must not notice
    monkeypatch.setitem(sys.modules, "nvfuser_direct", None)

    def f(x):
        return torch.nn.functional.gelu(x) * 2 + x.sum()

    jf = compiler.jit(f)
    x = torch.randn(4, 5)
    torch.testing.assert_close(jf(x), f(x))
    assert compiler.last_traces(jf)[-1].header.startswith("execution trace: torch, python")
    assert jf.executors_for((x,), {}) is DEFAULT_EXECUTORS


def test_explicit_executors_are_kept_whatever_the_devices():
    jf = compiler.jit(lambda x: x + 1, executors=("torch",))
    assert [e.name for e in jf.executors_for((torch.ones(1),), {})] == ["torch", "python"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: the default for CUDA inputs cannot run here "
                    "(the choice itself is checked by the tests above)")
def test_cuda_default_matches_eager_and_uses_nvfuser_where_installed():
    def f(x, w):
        return torch.nn.functional.silu(x) * w + x.mean(-1, keepdim=True)

    x, w = torch.randn(64, 128, device="cuda"), torch.randn(128, device="cuda")
    jf = compiler.jit(f)
    with torch.no_grad():
        torch.testing.assert_close(jf(x, w), f(x, w))
    names = [b.symbol.name for b in compiler.last_traces(jf)[-1].bsyms]
    assert any(n.startswith("nvfuser_fusion") for n in names) == (nvfuser_unavailable() is None)
