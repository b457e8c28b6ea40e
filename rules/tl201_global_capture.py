"""TL201 global-capture: a jitted function reads a module global that can change between calls."""

from __future__ import annotations

from ._jit_scopes import free_reads, jitted_scopes
from .compilers import compiled_message
from .base import Finding, RuleInfo

INFO = RuleInfo(
    code="TL201",
    name="global-capture",
    severity="warning",
    summary="A jitted function reads a module global that is not a module, function, class or constant.",
    docs="""\
## What it does
Reports the first read, inside a jitted function, of a module-level variable that is not a module, a
function, a class, or an UPPER_CASE constant assigned exactly once. A lowercase `x = 5` is a variable.

## Why is this bad?
A global is a hidden input. A compiler that bakes its value into the compiled trace keeps returning
results for the old value after the global changes; one that guards it recompiles on every change. Either
way the function's result depends on more than its arguments.

## Example
```python
scale = 5

@thunder.jit
def f(x):
    return x * scale
```

## Use instead
Pass the value in, or make it a real constant:
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
        "import thunder\nimport torch\nSCALE = 5\n@thunder.jit\ndef f(x):\n    return torch.sin(x) * SCALE\n",
        "import thunder\ndef helper(x):\n    return x + 1\n@thunder.jit\ndef f(x):\n    return helper(x)\n",
        "x = 5\ndef f():\n    return x\n",  # not jitted
        # a class made by namedtuple, and a backward-compatible alias of it, are classes
        "import torch\nfrom collections import namedtuple\nOutputs = namedtuple('Outputs', ['logits', 'aux'])\n"
        "_Outputs = Outputs\n@torch.compile\ndef f(x):\n    return _Outputs(x, None) if x.dim() else Outputs(x, x)\n",
        # a local variable's annotation is never evaluated (torchaudio's `base_hypos: List[Hypothesis] = []`)
        "import torch\nfrom typing import List\nHypothesis = tuple\nHypothesis = list\n@torch.compile\ndef f(x):\n"
        "    hypos: List[Hypothesis] = []\n    return x\n",
        # taken once from a class or a module: code, not data (x-transformers' `detach_multiple = DetachMultiple.apply`)
        "import torch\nimport torch.nn.functional as F\nclass Detach(torch.autograd.Function):\n    @staticmethod\n"
        "    def forward(ctx, x):\n        return x.detach()\ndetach = Detach.apply\ngelu = F.gelu\n@torch.compile\n"
        "def f(x):\n    return gelu(detach(x))\n",
        # a constant bound once on every path
        "import torch\ntry:\n    import apex\n    HAS_APEX = True\nexcept ImportError:\n    HAS_APEX = False\n"
        "@torch.compile\ndef f(x):\n    return x * 2 if HAS_APEX else x\n",
    ],
    invalid=[
        "import thunder\nx = 5\n@thunder.jit\ndef foo():\n    return x\n",
        # bound once per import path, but used as data, not as a namespace
        "import torch\ntry:\n    import fast\n    scale = fast.SCALE\nexcept ImportError:\n    scale = None\n"
        "@torch.compile\ndef f(x):\n    return x * scale\n",
        "import torch\nSCALE = 5\nSCALE = 6\ndef f(x):\n    return x * SCALE\ng = torch.compile(f)\n",
        # a module-level helper the jitted function calls is traced with it: its global reads are hidden inputs
        "import torch\nregistry = {}\ndef scale_of(x):\n    return x * registry.get('scale', 1.0)\n"
        "@torch.compile\ndef f(x):\n    return scale_of(x) + 1\n",
        # an attribute of a data global is data
        "import torch\nclass Cfg:\n    scale = 1.0\ncfg = Cfg()\nscale = cfg.scale\n@torch.compile\ndef f(x):\n"
        "    return x * scale\n",
        # an alias of a mutable global is just as mutable
        "import torch\ncounter = 0\nalias = counter\n@torch.compile\ndef f(x):\n    return x + alias\n",
    ],
)


def check(ctx):
    for target, scope in jitted_scopes(ctx):
        for node, kind, _ in free_reads(ctx, scope):
            if kind == "global":
                yield Finding(
                    node,
                    **compiled_message(
                        target,
                        f"{target.subject} reads the module global `{node.id}`, a hidden input",
                        "pass it in, or make it a constant",
                        "—a hidden input that a compiled trace may bake in and keep using after it changes",
                        "guards on its value: every new value recompiles the function (a recompile per change, "
                        "and eager fallback past the recompile limit)",
                        "TL201",
                    ),
                )
