"""TL204 side-effect-call: print/open/input/random/time/globals() inside a jitted function."""

from __future__ import annotations

import ast

from ._jit_scopes import jitted_scopes
from ._torch_api import eager_only_spans, in_spans, mentions_compiling_checks
from .compilers import compiled_message
from .base import Finding, RuleInfo

_BUILTINS = frozenset({"print", "open", "input", "breakpoint", "globals", "locals", "vars"})
_MODULES = ("random", "time")

INFO = RuleInfo(
    code="TL204",
    name="side-effect-call",
    severity="warning",
    summary="A jitted function calls print/open/input, module-level random.* or time.*, or globals()/locals()/vars().",
    docs="""\
## What it does
Reports calls with side effects or hidden inputs inside a jitted function: `print`, `open`, `input`,
`breakpoint`, functions of the `random` and `time` modules, and `globals()`/`locals()`/`vars()` (without
an argument: `vars(obj)` only reads an object's attributes).

## Why is this bad?
A compiler traces the function once and replays the trace: the print happens only while tracing, the
random number or the time stamp is baked in as a constant, and the introspection sees the compiler's
frames rather than yours. The compiled function silently behaves differently from the Python one.

## Example
```python
@torch.compile
def step(x):
    print("step", x.shape)
    return x * random.random()
```

## Use instead
Keep side effects outside the compiled region and use tensor randomness:
```python
@torch.compile
def step(x):
    return x * torch.rand(())
```

## Fix safety
There is no automatic fix.

## References
- [torch.compile: graph breaks and side effects](https://pytorch.org/docs/stable/torch.compiler_faq.html)
- [lightning-thunder #132](https://github.com/Lightning-AI/lightning-thunder/issues/132)
""",
    valid=[
        "import torch\n@torch.compile\ndef f(x):\n    return x * torch.rand(())\n",
        "import thunder\n@thunder.jit\ndef f(x):\n    def print(*a):\n        return a\n    print(x)\n    return x\n",
        "import random\ndef f(x):\n    print(x)\n    return random.random()\n",  # not jitted
        # a helper that the compiler runs without tracing it
        "import torch\n@torch.compiler.disable\ndef log(x):\n    print(x.shape)\n@torch.compile\ndef f(x):\n"
        "    log(x)\n    return x + 1\n",
        # eager-only code: under a compiler is_compiling() is true and the print never runs
        "import torch\n@torch.compile\ndef f(x):\n    if not torch.compiler.is_compiling():\n        print('eager', x.shape)\n"
        "    return x + 1\n",
    ],
    invalid=[
        "import torch\n@torch.compile\ndef f(x):\n    print('step', x.shape)\n    return x\n",
        "import random\nimport thunder\n@thunder.jit\ndef f(x):\n    return x * random.random()\n",
        "import thunder\nfrom time import time\n@thunder.jit\ndef f(x):\n    t = time()\n    return x + t\n",
        # a helper called from the jitted function is traced with it
        "import torch\ndef log(x):\n    print(x.shape)\n@torch.compile\ndef f(x):\n    log(x)\n    return x + 1\n",
        # the compiling branch of an is_compiling() check is still traced
        "import torch\n@torch.compile\ndef f(x):\n    if torch.compiler.is_compiling():\n        print('compiled')\n"
        "    else:\n        x = x + 0\n    return x\n",
    ],
)


def _side_effect(ctx, scope, call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        if scope.owner_of(func.id) is not None:
            return None  # a local or closure function of that name
        if func.id == "vars" and (call.args or call.keywords):
            return None  # vars(obj) is obj.__dict__, not the frame's locals
        if func.id in _BUILTINS and func.id not in ctx.index.bindings:
            return f"`{func.id}()`"
        origin = ctx.index.imports.get(func.id, "")
        if origin.split(".")[0] in _MODULES and func.id in ctx.index.bindings:
            return f"`{origin}()`"
        return None
    root = func
    while isinstance(root, ast.Attribute):
        root = root.value
    if isinstance(root, ast.Name) and scope.owner_of(root.id) is None:
        name = ctx.resolve(func) or ""
        if name.split(".")[0] in _MODULES and ctx.index.imports.get(root.id, "").split(".")[0] in _MODULES:
            return f"`{name}()`"
    return None


def check(ctx):
    checks = mentions_compiling_checks(ctx.source.text)
    for target, jit_scope in jitted_scopes(ctx):
        eager_only = eager_only_spans(target.info.node, ctx.facts(target.info.node).all_ifs) if checks else []
        for scope in jit_scope.walk():
            for call in scope.calls:
                if eager_only and in_spans(call, eager_only):
                    continue  # `if not torch.compiler.is_compiling(): print(...)` never runs compiled
                what = _side_effect(ctx, scope, call)
                if what:
                    yield Finding(
                        call,
                        **compiled_message(
                            target,
                            f"{what} inside {target.subject} is a Python side effect",
                            "move it out of the compiled function",
                            "runs only while tracing: the compiled function skips it or bakes its result in",
                            "runs it on every call at the cost of a graph break around it (the code before and "
                            "after compiles as separate graphs)",
                            "TL204",
                        ),
                    )
