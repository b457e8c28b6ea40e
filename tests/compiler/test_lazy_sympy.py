"""The first jit calls in a fresh process run torch's Python meta kernels without executing sympy or
torch.fx.experimental.symbolic_shapes (compiler/meta/lazy_sympy.py), give eager's results, and the deferred
modules run in place, as the same module objects, the moment anything else needs them."""
import os
import subprocess
import sys
import warnings

import pytest
import torch

_FIRST_CALLS = r"""
import sys, types
import torch
import compiler
from compiler.meta import lazy_sympy
sys.path.insert(0, "tests/compiler")
from test_gpt_model import make_model, tokens

def f(x, y, n):
    a = torch.sin(x + y) * 2 - n            # int tensor n: type promotion in the Python meta kernels
    b = torch.where(a > 0, torch.exp(-a.abs()), a / (y.abs() + 1))
    return torch.relu(b + x[:1]) * 0.5      # broadcasting, a Python scalar

torch.manual_seed(0)
x, y, n = torch.randn(4, 5), torch.randn(4, 5), torch.arange(5)
mlp = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.GELU(), torch.nn.LayerNorm(8), torch.nn.Softmax(-1))
gpt = make_model(torch.float32)
assert torch.equal(compiler.jit(f)(x, y, n), f(x, y, n))
with torch.no_grad():
    assert torch.allclose(compiler.jit(mlp)(x), mlp(x), rtol=1e-6, atol=1e-7)
    assert torch.allclose(compiler.jit(gpt)(tokens()), gpt(tokens()), rtol=1e-5, atol=1e-6)
assert lazy_sympy.pending() == ["sympy", "torch.fx.experimental.symbolic_shapes"], lazy_sympy.pending()
ran = [m for m in sys.modules if m.startswith(("sympy.", "mpmath", "torch.utils._sympy"))]
assert not ran, ran[:5]
shapes, sym = sys.modules["torch.fx.experimental.symbolic_shapes"], sys.modules["sympy"]
assert isinstance(shapes, types.ModuleType) and torch.fx.experimental.symbolic_shapes is shapes
"""

_THEN_SHAPES = r"""
from torch.fx.experimental.symbolic_shapes import ShapeEnv, guard_or_false   # runs it (and sympy)
assert lazy_sympy.pending() == [] and type(shapes) is types.ModuleType
assert sys.modules["torch.fx.experimental.symbolic_shapes"] is shapes and sys.modules["sympy"] is sym
assert guard_or_false is shapes.__dict__["guard_or_false"] and guard_or_false.__module__ == shapes.__name__
import sympy
assert sympy is sym and isinstance(sympy.Integer(3), sympy.Basic) and str(sympy.Symbol("s") + 1) == "s + 1"
from torch._prims_common import elementwise_dtypes, ELEMENTWISE_TYPE_PROMOTION_KIND
assert elementwise_dtypes(x, sympy.Float(1.5), type_promotion_kind=ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT) \
    == (torch.float32, torch.float32)
env = ShapeEnv()
u = env.create_unbacked_symint()
assert guard_or_false(u == 3) is False and torch.fx.experimental.symbolic_shapes.is_nested_int(u) is False
def g(x, y):
    return torch.tanh(x * y + 1)
assert torch.equal(compiler.jit(g)(x, y), g(x, y))
assert torch.equal(torch.compile(f, backend="eager")(x, y, n), f(x, y, n))
print("ok")
"""

_THEN_SYMPY_SUBMODULE = r"""
from sympy.core.numbers import Integer                  # a submodule first: reads the package's __path__
assert lazy_sympy.pending() == ["torch.fx.experimental.symbolic_shapes"] and type(sym) is types.ModuleType
assert sys.modules["sympy"] is sym and sym.Integer is Integer and Integer(2) + 3 == 5
assert isinstance(sym.Integer(1), sym.Basic)
assert "guard_or_false" in dir(shapes)                   # dir() of a deferred module runs it first
assert type(shapes) is types.ModuleType and sys.modules["torch.fx.experimental.symbolic_shapes"] is shapes
import torch._dynamo                                     # imports symbolic_shapes at module level: ran already
assert lazy_sympy.pending() == [] and sys.modules["torch.fx.experimental.symbolic_shapes"] is shapes
assert torch.equal(torch.compile(f, backend="eager")(x, y, n), f(x, y, n))
print("ok")
"""


def _run(code):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300,
                          cwd=root)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def test_first_calls_leave_sympy_unexecuted_then_symbolic_shapes_runs_in_place():
    _run(_FIRST_CALLS + _THEN_SHAPES)


def test_importing_a_sympy_submodule_or_torch_dynamo_runs_the_deferred_modules():
    first_calls = _FIRST_CALLS.replace("gpt = make_model(torch.float32)", "").replace(
        "    assert torch.allclose(compiler.jit(gpt)(tokens()), gpt(tokens()), rtol=1e-5, atol=1e-6)\n", "")
    assert "gpt" not in first_calls.split("tokens\n", 1)[1]  # the GPT block is the other test's (time)
    _run(first_calls + _THEN_SYMPY_SUBMODULE)


def _outcome(fn, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            r = fn(*args)
            out = ("value", type(r), r)
        except Exception as e:  # noqa: BLE001 - the same exception type is part of "the same answer"
            out = ("raises", type(e))
    return out, [(w.category, str(w.message)) for w in caught]


def test_helpers_answer_as_symbolic_shapes_does():
    from torch.fx.experimental import symbolic_shapes as real
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    from compiler.meta import lazy_sympy

    class Int(int):  # an int subclass (as compiler.symbolic's SymInt is): the helpers hand it to the real ones
        pass

    u = ShapeEnv().create_unbacked_symint()
    values = [True, False, 0, 1, 7, -2, 1.5, None, "x", (1, 2), [1, 2], torch.Size([1, 2]), (), [], (1, True),
              (1, 2, 3), (Int(1), 2), Int(2), u, u == 2]
    for name, helper in lazy_sympy._HELPERS.items():
        truth = getattr(real, name)
        arity = 2 if name == "sym_eq" else 1
        cases = [(v,) for v in values] if arity == 1 else [(a, b) for a in values for b in values]
        if name in ("sym_and", "sym_or"):
            cases += [(a, b) for a in values[:3] for b in values[:3]] + [(True, True, False), (True, 1)]
        for args in cases:
            if any(isinstance(a, (torch.SymInt, torch.SymBool)) for a in args) and name in ("expect_true",):
                continue  # records a runtime assert on the ShapeEnv: compared below, each with its own env
            assert _outcome(helper, *args) == _outcome(truth, *args), (name, args)
    recorded = []
    for fn in (real.expect_true, lazy_sympy.expect_true):
        env = ShapeEnv()
        u = env.create_unbacked_symint()
        recorded.append((fn(u == 2), {str(k): [str(a.expr) for a in v] for k, v in env.deferred_runtime_asserts.items()}))
    assert recorded[0] == recorded[1] == (True, {"u0": ["Eq(u0, 2)"]})


def test_sympy_basic_stand_in_has_no_instances_until_sympy_runs():
    from compiler.meta import lazy_sympy

    # In this process sympy may already have run (then it is the real check); the stand-in's rule either way:
    module = sys.modules.get("sympy")
    if module is None or type(module) is lazy_sympy._Deferred:
        assert not isinstance(1, lazy_sympy._Basic) and not isinstance(torch.ones(1), lazy_sympy._Basic)
    else:
        assert isinstance(module.Integer(1), lazy_sympy._Basic) and not isinstance(1, lazy_sympy._Basic)


@pytest.mark.parametrize("name", ["guard_or_false", "is_nested_int"])
def test_only_torch_function_local_imports_get_the_helpers(name):
    from compiler.meta import lazy_sympy

    here = sys._getframe(0)
    assert lazy_sympy._shapes_quick(name, here) is None  # a test's (not torch's) frame: the real module
