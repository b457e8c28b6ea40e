"""Parameter gradients through the fused path (executors=("inductor", "torch")) with module hooks registered and
with a parameter's requires_grad toggled between calls, against eager, in every cache mode.

With cache="symbolic values" a fusing executor plans each call's sizes by tracing the symbolic trace's
torch-executor form again (runtime/cache.py, _FusedPerCall); module backward hooks' setup ops in it ran torch's
BackwardHook on that nested trace's proxies (autograd.Function.apply: "unwrap_if_dead(): incompatible function
arguments ... TensorProxy"). Such traces run unfused (functionalization keeps them in eager order anyway).
"""
from __future__ import annotations

import functools
import warnings

import pytest
import torch

import compiler
from test_differential import assert_same

MODES = ["constant values", "symbolic values", "no caching"]
FUSED = ("inductor", "torch")


def _model(hooks: str):
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    seen = []
    if "forward" in hooks:
        m[0].register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
        m[0].register_forward_hook(lambda mod, args, out: out + 1)
    if "backward" in hooks:
        for name, sub in m.named_modules():
            sub.register_full_backward_hook(functools.partial(lambda n, mod, gi, go: seen.append(n), name))
            sub.register_full_backward_pre_hook(functools.partial(lambda n, mod, go: seen.append("pre " + n), name))
        m[2].register_full_backward_hook(lambda mod, gi, go: (gi[0] * 3,))  # (a replacement grad_input)
    return m, seen


def _step(fn, m, x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (full backward hooks warn when no input requires grad)
        out = fn(x)
        out.pow(2).sum().backward()
    return out, [p.grad for p in m.parameters()]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("hooks", ["forward", "backward", "forward and backward"])
def test_parameter_gradients_with_module_hooks(hooks, mode):
    em, eseen = _model(hooks)
    cm, cseen = _model(hooks)
    jm = compiler.jit(cm, cache=mode, executors=FUSED)
    for call, rows in enumerate((4, 4, 6)):  # (a new size: symbolic values plan it again)
        x = torch.randn(rows, 8, generator=torch.Generator().manual_seed(call))
        expected, egrads = _step(em, em, x)
        actual, grads = _step(jm, cm, x)
        assert_same(actual, expected, where=f"call {call}: result")
        assert_same(grads, egrads, where=f"call {call}: parameter gradients")  # (accumulated over the calls)
        assert cseen == eseen


@pytest.mark.parametrize("mode", MODES)
def test_requires_grad_toggled_between_calls(mode):
    em, _ = _model("")
    cm, _ = _model("")
    jm = compiler.jit(cm, cache=mode, executors=FUSED)
    for call, flag in enumerate((True, False, False, True, False)):
        for m in (em, cm):
            m[0].weight.requires_grad_(flag)
            m.zero_grad(set_to_none=True)
        x = torch.randn(4, 8, generator=torch.Generator().manual_seed(call))
        expected, egrads = _step(em, em, x)
        actual, grads = _step(jm, cm, x)
        assert_same(actual, expected, where=f"call {call}: result")
        assert [g is None for g in grads] == [g is None for g in egrads], f"call {call}"
        assert_same([g for g in grads if g is not None], [g for g in egrads if g is not None],
                    where=f"call {call}: parameter gradients")
