"""TL402 recompile (observed): `thunder-lint run --observe` saw the program's own torch.compile recompile because
a guard on the value read at this line failed. The examples are programs run under --observe by
tests/run/test_observe_rules.py."""

from .base import RuleInfo

INFO = RuleInfo(
    code="TL402",
    name="recompile",
    severity="warning",
    summary="`run --observe`: torch.compile recompiled because a guard on the value read at this line failed.",
    docs="""\
## What it does
Reports, while `thunder-lint run --observe` runs the program with its own `torch.compile`, each line whose
value a failed guard read: a global, a module attribute, an int argument, a closure variable, a tensor's
size or dtype. torch gives each guard the user stack where dynamo read the value; the finding is at that
line, with the guard in words ("`self.k` was 7 when compiled, now it differs"), the number of recompiles,
and whether the recompile limit (`torch._dynamo.config.recompile_limit`) was hit, after which the function
ran eagerly. A note names the static rule (TL201, TL202, TL205, TL301) that predicted it at that line.

## Why is this bad?
Every recompile traces and compiles the function again (seconds with inductor), and the cache grows by one
entry per value; past the recompile limit the function silently runs uncompiled from then on.

## Example
```python
scale = 1.0

@torch.compile
def f(x):
    return x * scale  # TL402 when `scale` changes between calls
```

## Use instead
Pass the value as a tensor argument (`f(x, torch.tensor(scale))`), or keep it constant.

## Fix safety
There is no automatic fix: the finding reports what happened at run time.

## References
- [torch.compile: recompilation](https://docs.pytorch.org/docs/main/user_guide/torch_compiler/compile/programming_model.recompilation.html)
- `thunder-lint rule TL201`, `thunder-lint rule TL205`; docs/observe.md
""",
    valid=[
        "import torch\nscale = 2.0\n@torch.compile(backend='eager')\ndef f(x):\n    return x * scale\n"
        "for _ in range(3):\n    f(torch.randn(4))\n",
    ],
    invalid=[
        "import torch\nscale = 1.0\n@torch.compile(backend='eager')\ndef f(x):\n    return x * scale\n"
        "for i in range(3):\n    scale = float(i)\n    f(torch.randn(4))\n",
    ],
)
