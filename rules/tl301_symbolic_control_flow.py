"""TL301 symbolic-control-flow: Python control flow on symbolic scalars or shapes of a dynamic compile."""

from __future__ import annotations

import ast

from ._values import Values
from ._compilers import compiled_message
from .base import Finding, RuleInfo

INFO = RuleInfo(
    code="TL301",
    name="symbolic-control-flow",
    severity="warning",
    summary="A function compiled with symbolic/dynamic values branches on a scalar argument or a tensor shape.",
    docs="""\
## What it does
In a function compiled with symbolic values (`thunder.jit(f, cache="symbolic values")`,
`cache=thunder.CACHE_OPTIONS.SYMBOLIC_VALUES`, `torch.compile(f, dynamic=True)`), reports `if`, `while`,
conditional expressions, `assert`, `range(...)` loop bounds and `min`/`max` decided by a scalar argument
or by a tensor shape. `is None` checks, flags with a `True`/`False` default and module attributes such as
`self.training` are not symbolic and are not reported.

## Why is this bad?
With symbolic values the compiled trace is reused for other values of the same input. Python control flow
on such a value runs once, while tracing; unless the compiler guards it, the cached trace is reused for an
input that should have taken the other branch, and the result is silently wrong (lightning-thunder #262:
`jfoo(6)` and `jfoo(0)` both returned `tensor([1.])`).

## Example
```python
def foo(flag):
    if flag > 5:
        return torch.ones(1)
    return torch.zeros(1)

jfoo = thunder.jit(foo, cache=thunder.CACHE_OPTIONS.SYMBOLIC_VALUES)
```

## Use instead
Express the choice as tensor computation, or compile with constant values for that input:
```python
def foo(flag):
    return torch.where(torch.tensor(flag > 5), torch.ones(1), torch.zeros(1))
```

## Fix safety
There is no automatic fix.

## References
- [lightning-thunder #262: dynamic constraints and NumberProxies](https://github.com/Lightning-AI/lightning-thunder/issues/262)
- [torch.compile dynamic shapes](https://pytorch.org/docs/stable/torch.compiler_dynamic_shapes.html)
""",
    valid=[
        # constant-values caching (the default) specializes on the value: no hazard
        "import thunder, torch\ndef foo(flag):\n    if flag > 5:\n        return torch.ones(1)\n    return torch.zeros(1)\n"
        "jfoo = thunder.jit(foo)\n",
        "import torch\n@torch.compile(dynamic=True)\ndef f(x, mask=None):\n    if mask is not None:\n        x = x * mask\n    return x\n",
        "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        if self.training:\n            return x * 2\n"
        "        return x\nm = torch.compile(M(), dynamic=True)\n",
        # the rank and the dtype are never symbolic, even with dynamic shapes
        "import torch\n@torch.compile(dynamic=True)\ndef f(x):\n    if x.dim() == 4 and x.dtype == torch.float16:\n"
        "        x = x.float()\n    return x\n",
    ],
    invalid=[
        "import thunder, torch\ndef foo(flag):\n    if flag > 5:\n        return torch.ones(1)\n    return torch.zeros(1)\n"
        "jfoo = thunder.jit(foo, cache=thunder.CACHE_OPTIONS.SYMBOLIC_VALUES)\n",
        "import torch\n@torch.compile(dynamic=True)\ndef f(x):\n    if x.shape[0] > 8:\n        return x[:8]\n    return x\n",
        "import thunder\ndef f(x, n):\n    for i in range(n):\n        x = x + i\n    return x\ng = thunder.jit(f, cache='symbolic values')\n",
        # sizes unpacked from a shape are symbolic too
        "import torch\n@torch.compile(dynamic=True)\ndef f(x, verbose: bool = False):\n    bsz, q_len, _ = x.size()\n"
        "    if verbose and q_len > 1:\n        x = x[:, -1:]\n    return x\n",
    ],
)


def check(ctx):
    for target in ctx.jitted:
        if not target.symbolic:
            continue
        facts = ctx.facts(target.info.node)
        values = Values(ctx, target.info, facts)
        for kind, test in facts.tests:
            if kind == "for":
                decided = (
                    isinstance(test, ast.Call)
                    and isinstance(test.func, ast.Name)
                    and test.func.id == "range"
                    and any(values.is_symbolic(a) for a in test.args)
                )
            else:
                decided = values.decides_on_symbolic(test)
            if decided:
                yield Finding(
                    test,
                    **compiled_message(
                        target,
                        f"{_KIND[kind]} decided by a symbolic value in {target.label} (compiled with symbolic/"
                        f"dynamic values)",
                        "—a cached trace may be reused for inputs that take the other path",
                        "guards on this condition: inputs that take the other path recompile (one compile per path)",
                    ),
                )
        for call in facts.calls:
            if isinstance(call.func, ast.Name) and call.func.id in ("min", "max") and len(call.args) > 1:
                if any(values.is_symbolic(a) for a in call.args):
                    yield Finding(
                        call,
                        **compiled_message(
                            target,
                            f"`{call.func.id}` of a symbolic value in {target.label}",
                            "picks one side while tracing; the cached trace keeps that choice",
                            "guards on which side it picked: the other side recompiles",
                        ),
                    )


_KIND = {"if": "`if`", "while": "`while` loop", "ifexp": "conditional expression", "assert": "`assert`",
         "for": "loop bound"}
