"""TL403 differs-from-eager (observed): `thunder-lint run --observe --verify` ran a compiled call again eagerly and
the results differed; the finding is at the first line whose value differs inside the compiled graph. The
examples are programs run under --observe --verify by tests/run/test_observe_rules.py."""

from .base import RuleInfo

INFO = RuleInfo(
    code="TL403",
    name="differs-from-eager",
    severity="error",
    summary="`run --observe --verify`: a compiled call's result differed from eager; first differing line.",
    docs="""\
## What it does
With `thunder-lint run --observe --verify`, every call of a graph that the program's torch.compile built is
run a second time, eagerly, on the same inputs (copies, where the graph writes in place) and the same
module state (parameters and buffers are graph inputs), with random ops under the generator state the
compiled call started from. Outputs and in-place writes are compared with `torch.testing.assert_close`'s
tolerances for their dtype. Where they differ, the graph is compiled once more by the same backend with
every intermediate value as an output, and the finding is at the user line (the FX node's `stack_trace`) of
the first value that differs, naming the op and the largest difference. Calls that cannot be checked (inputs
that cannot be copied, an eager run that fails, results that depend on the backend's own random numbers) are
counted as not verified in the summary, never as equal.

## Why is this bad?
The compiled program computes something other than the program you wrote: a backend bug, a numerics
change beyond the dtype's tolerance, or a hazard such as TL101's reshape/in-place that eager and compiled
code resolve differently.

## Example
A backend (here a user-registered one) that lowers `torch.tanh` wrongly:
```python
def my_backend(gm, example_inputs):
    for n in gm.graph.nodes:
        if n.target is torch.tanh:
            n.target = torch.sigmoid
    gm.recompile()
    return gm.forward

@torch.compile(backend=my_backend)
def f(x):
    return torch.tanh(x) + 1  # TL403: `torch.tanh` differs from eager
```

## Use instead
Fix or report the backend's lowering of the named op; compile the function with another backend meanwhile.

## Fix safety
There is no automatic fix: the finding reports what happened at run time.

## References
- [torch.compile accuracy minifier](https://docs.pytorch.org/docs/stable/torch.compiler_troubleshooting.html)
- docs/observe.md
""",
    valid=[
        "import torch\n@torch.compile(backend='inductor')\ndef f(x, w):\n    return torch.tanh(x @ w).sum(-1)\n"
        "f(torch.randn(4, 3), torch.randn(3, 3))\n",
    ],
    invalid=[
        "import torch\ndef my_backend(gm, example_inputs):\n    for n in gm.graph.nodes:\n"
        "        if n.target is torch.tanh:\n            n.target = torch.sigmoid\n    gm.recompile()\n"
        "    return gm.forward\n@torch.compile(backend=my_backend)\ndef f(x):\n    y = x * 2\n"
        "    return torch.tanh(y) + 1\nf(torch.randn(4))\n",
    ],
)
