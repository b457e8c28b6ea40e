"""TL202 closure-capture: a jitted function reads a variable of an enclosing function."""

from __future__ import annotations

from ._jit_scopes import free_reads, jitted_scopes
from .compilers import compiled_message
from .base import Finding, RuleInfo

INFO = RuleInfo(
    code="TL202",
    name="closure-capture",
    severity="warning",
    summary="A jitted function reads a free variable captured from an enclosing function.",
    docs="""\
## What it does
Reports the first read, inside a jitted function, of a variable that belongs to an enclosing function
outside the jitted one (a closure cell). Closures *inside* the jitted function over its own variables are
fine: they are part of the compiled computation.

## Why is this bad?
A closure cell is a hidden input, like a global: a compiler that binds it at compile time returns stale
results after the enclosing function rebinds it.

## Example
```python
def make():
    scale = 2.0
    @thunder.jit
    def f(x):
        return x * scale
    return f
```

## Use instead
```python
@thunder.jit
def f(x, scale):
    return x * scale
```

## Fix safety
There is no automatic fix.

## References
- [lightning-thunder #132: functional jit loading closures sharp edge](https://github.com/Lightning-AI/lightning-thunder/issues/132)
""",
    valid=[
        # the closure's variable is the jitted function's own argument
        "import thunder\n@thunder.jit\ndef foo(x):\n    def bar():\n        return x\n    return bar()\n",
        # an enclosing helper function is not data
        "import thunder\ndef outer():\n    def helper(x):\n        return x\n    @thunder.jit\n    def f(x):\n        return helper(x)\n    return f\n",
    ],
    invalid=[
        # a parameter of the enclosing function
        "import thunder\ndef make(scale):\n    @thunder.jit\n    def f(x):\n        return x * scale\n    return f\n",
        "import thunder\ndef make():\n    scale = 2.0\n    @thunder.jit\n    def f(x):\n        return x * scale\n    return f\n",
    ],
)


def check(ctx):
    for target, scope in jitted_scopes(ctx):
        for node, kind, owner in free_reads(ctx, scope):
            if kind == "closure":
                yield Finding(
                    node,
                    **compiled_message(
                        target,
                        f"{target.subject} reads `{node.id}` of the enclosing `{getattr(owner.node, 'name', '<lambda>')}`, "
                        f"a hidden input",
                        "pass it in as an argument",
                        "—a hidden input a compiled trace may bake in",
                        "guards on the captured value: a change recompiles the function",
                        "TL202",
                    ),
                )
