"""TL401 graph-break (observed): `thunder-lint run --observe` saw the program's own torch.compile break the graph
at this line. The examples are programs: tests/run/test_observe_rules.py runs each under --observe."""

from .base import RuleInfo

INFO = RuleInfo(
    code="TL401",
    name="graph-break",
    severity="warning",
    summary="`run --observe`: the program's torch.compile broke the graph at this line (dynamo's reason, calls).",
    docs="""\
## What it does
Reports, while `thunder-lint run --observe` runs the program with its own `torch.compile` (backend and
options as the program set them), each line where dynamo ended a graph and fell back to Python: a
data-dependent branch, an unsupported call (`print`, a C extension), an op dynamo cannot trace. The finding
is at the user's innermost line (a break inside a helper is reported in the helper), with dynamo's reason in
one line, how many calls broke there and in how many compiles. A note names the static rule (TL204, TL302,
...) that predicted the break at that line, or says none did.

## Why is this bad?
Each break splits the function into separate graphs: the compiler cannot fuse across it, tensors cross
it as Python values, and the code after it is compiled again as a resume function, with its own guards
and recompiles. Most breaks cost speed; a break inside a loop makes dynamo give up on the whole frame.

## Example
```python
@torch.compile
def step(x):
    if x.sum() > 0:  # TL401: data-dependent branch
        x = x * 2
    return x + 1
```

## Use instead
```python
@torch.compile
def step(x):
    x = torch.where(x.sum() > 0, x * 2, x)
    return x + 1
```

## Fix safety
There is no automatic fix: the finding reports what happened at run time.

## References
- [torch.compile: graph breaks](https://docs.pytorch.org/docs/stable/torch.compiler_troubleshooting.html)
- `thunder-lint rule TL302`, `thunder-lint rule TL204`; docs/observe.md
""",
    valid=[
        "import torch\n@torch.compile(backend='eager')\ndef f(x):\n    return torch.where(x.sum() > 0, x * 2, x)\n"
        "f(torch.randn(4))\n",
    ],
    invalid=[
        "import torch\n@torch.compile(backend='eager')\ndef f(x):\n    if x.sum() > 0:\n        x = x * 2\n"
        "    return x + 1\nf(torch.randn(4))\n",
        "import torch\n@torch.compile(backend='eager')\ndef f(x):\n    print('step')\n    return x + 1\n"
        "f(torch.randn(4))\n",
    ],
)
