"""The first jit call in a fresh process runs torch's Python meta kernels without importing torch._dynamo
(compiler/meta/lazy_dynamo.py), gives eager's results, and hands torch its own behaviour back once
torch._dynamo is imported. It needs a process that has not imported torch._dynamo: a subprocess."""
import os
import subprocess
import sys

_CODE = r"""
import sys
import torch
import compiler
from compiler.meta import lazy_dynamo

def f(x, y, n):
    a = torch.sin(x + y) * 2 - n            # int tensor n: type promotion in the Python meta kernels
    b = torch.where(a > 0, torch.exp(-a.abs()), a / (y.abs() + 1))
    return torch.relu(b + x[:1])            # broadcasting

torch.manual_seed(0)
x, y, n = torch.randn(4, 5), torch.randn(4, 5), torch.arange(5)
mlp = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.GELU(), torch.nn.LayerNorm(8), torch.nn.Softmax(-1))
assert torch.equal(compiler.jit(f)(x, y, n), f(x, y, n))
with torch.no_grad():
    assert torch.allclose(compiler.jit(mlp)(x), mlp(x), rtol=1e-6, atol=1e-7)
assert "torch._dynamo" not in sys.modules, "the first calls imported torch._dynamo"
kernels = list(lazy_dynamo._installed)
assert lazy_dynamo.active() and len(kernels) > 50

import torch._dynamo                        # from here on torch behaves as shipped
assert not lazy_dynamo.active() and lazy_dynamo._hook not in sys.meta_path
assert all(getattr(k, "__dynamo_disable", None) is None for k in kernels)
def g(x, y):
    return torch.tanh(x * y + 1)
assert torch.equal(compiler.jit(g)(x, y), g(x, y))
assert any(getattr(getattr(k, "__dynamo_disable", None), "_torchdynamo_disable", False) for k in kernels)
assert torch.equal(torch.compile(f, backend="eager")(x, y, n), f(x, y, n))
print("ok")
"""


def test_first_call_skips_torch_dynamo_and_restores_torch_on_its_import():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", _CODE], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def test_finds_the_wrapped_meta_kernels_of_elementwise_ops():
    import torch

    from compiler.meta import lazy_dynamo

    found = {id(k) for k in lazy_dynamo._disable_dynamo_kernels()}
    inner = torch._compile._disable_dynamo(lambda: None).__code__
    for op in (torch.ops.aten.add.Tensor, torch.ops.aten.sin.default, torch.ops.aten.where.self):
        kernel = op.py_kernels[torch._C.DispatchKey.Meta]
        # the kernel's wrapper chain holds a torch._disable_dynamo wrapper whose function we found
        todo, hits = [kernel], []
        while todo:
            f = todo.pop()
            if getattr(f, "__code__", None) is inner:
                hits.append(f.__closure__[inner.co_freevars.index("fn")].cell_contents)
            todo.extend(c.cell_contents for c in getattr(f, "__closure__", None) or () if callable(c.cell_contents))
        assert hits and all(id(h) in found for h in hits), op
