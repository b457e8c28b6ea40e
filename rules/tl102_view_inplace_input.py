"""TL102 view-inplace-input: a jitted function writes in place through a view of one of its inputs."""

from __future__ import annotations

import ast

from ._torch_api import VIEW_ATTRIBUTES, VIEW_METHODS, is_basic_index, start, written_tensor
from ._values import Values, not_a_tensor_annotation
from ._option_writes import all_writes
from .compilers import compiled_message
from .tl103_inplace_alias_hazard import indexed_update, real_input
from .base import Finding, RuleInfo

INFO = RuleInfo(
    code="TL102",
    name="view-inplace-input",
    severity="error",
    summary="A jitted function mutates one of its inputs through a view (a side effect the caller sees).",
    docs="""\
## What it does
Inside a jitted function, reports an in-place write (`v.add_(...)`, `v += ...`, `v[i] = ...`, `out=v`) to a
view of a function argument: `x.view(...)`, `x.transpose(...)`, `x[0]`, `x.T`, ..., the write also spelled
as an option (`F.relu(x[0], inplace=True)`, `self.act(x.T)` with `self.act = nn.ReLU(inplace=True)`). A function
the compiled code calls is checked with what its callers pass, as TL103 does: its argument is an input only
where a compiled caller hands it one of its own. It also reports
`x[i] += ...` on an argument, which writes through the view `x[i]`. The trace check (`analyzer.check`,
`analyzer.jit`) follows views as the functionalization does, from the tensors themselves: it names the
input (arguments, module parameters and buffers) and the view ops in between. A write through the result
of `reshape`-like ops is TL101's finding, which says whether it was a view for those inputs.

## Why is this bad?
The caller's tensor changes. Compilers that functionalize a program have to replay such writes back into
the input's memory, through every view in between; where they do not (or do it in another order than
eager PyTorch), the caller silently sees different values.

## Example
```python
@thunder.jit
def f(x):
    row = x[0]
    row.zero_()
    return x.sum()
```

## Use instead
Compute a new tensor and return it, leaving the input untouched:
```python
@thunder.jit
def f(x):
    x = x.clone()
    x[0].zero_()
    return x.sum()
```

## Fix safety
There is no automatic fix: whether the caller relies on the mutation is a design decision.

## References
- [Tensor views](https://pytorch.org/docs/stable/tensor_view.html)
- [lightning-thunder #1193: copy_to_out](https://github.com/Lightning-AI/lightning-thunder/pull/1193)
""",
    valid=[
        "import thunder\n@thunder.jit\ndef f(x):\n    y = x.clone()\n    y[0].zero_()\n    return y\n",
        # not jitted: a plain function may document that it mutates its argument
        "def f(x):\n    x[0].zero_()\n    return x\n",
        "import thunder\n@thunder.jit\ndef f(x, idx):\n    y = x[idx]\n    y.add_(1)\n    return y\n",
        # a list argument (torchvision's `max_by_axis(the_list: list[list[int]])`): no tensor is written
        "import torch\n@torch.compile\ndef f(the_list: list[list[int]]):\n    maxes = the_list[0]\n"
        "    for sub in the_list[1:]:\n        for i, item in enumerate(sub):\n            maxes[i] = max(maxes[i], item)\n"
        "    return maxes\n",
        # an inplace option on a view of an intermediate, and pandas' option on a view of an argument
        "import torch\nimport torch.nn.functional as F\n@torch.compile\ndef f(x, frame):\n    h = x * 2\n"
        "    F.relu(h[0], inplace=True)\n    frame.T.fillna(0, inplace=True)\n    return h\n",
        # an indexed update (index_put), no view: TL103's finding
        "import torch\n@torch.compile\ndef f(x: torch.Tensor):\n    x[[0, 0]] += x[[0, 0]]\n    return x\n",
    ],
    invalid=[
        "import thunder\n@thunder.jit\ndef f(x):\n    row = x[0]\n    row.zero_()\n    return x.sum()\n",
        "import torch\ndef f(x):\n    x.transpose(0, 1).mul_(2)\n    return x\ng = torch.compile(f)\n",
        "import thunder, torch\n@thunder.jit\ndef f(x: torch.Tensor):\n    x[0] += 1\n    return x\n",
        # in-place writes spelled as options, through a view of an input
        "import torch\nimport torch.nn.functional as F\n@torch.compile\ndef f(x):\n    F.relu(x[0], inplace=True)\n"
        "    return x.sum()\n",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.act = nn.SiLU(inplace=True)\n    def forward(self, x):\n        self.act(x.transpose(0, 1))\n"
        "        return x\nmodel = torch.compile(Net())\n",
    ],
)


# What torch.compile does: tests/rules/test_rule_tl103_torch_compile.py runs a reported form under the eager,
# aot_eager and inductor backends (inductor writes the new values in the fused kernel: no extra copy).
TORCH_COMPILE = ("matches eager: it functionalizes the write and stores the new values into the caller's tensor, "
                 "through the view")


def _view_of_argument(facts, expr, pos, through_view=False, depth=0):
    """The argument name that ``expr`` is a view of (None if not, or if no view op is in between)."""
    if depth > 8:
        return None
    if isinstance(expr, ast.Name):
        b = facts.binding_at(expr.id, pos)
        if b == "param":
            return expr.id if through_view and expr.id not in ("self", "cls") else None
        if b is None or isinstance(b, str) or b.kind != "assign" or b.value is None:
            return None
        return _view_of_argument(facts, b.value, start(b.stmt), through_view, depth + 1)
    if isinstance(expr, ast.Subscript):
        if not is_basic_index(expr.slice):
            return None
        return _view_of_argument(facts, expr.value, pos, True, depth + 1)
    if isinstance(expr, ast.Attribute) and expr.attr in VIEW_ATTRIBUTES:
        return _view_of_argument(facts, expr.value, pos, True, depth + 1)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in VIEW_METHODS:
        if expr.func.attr in ("split", "chunk", "unbind", "tensor_split", "hsplit", "vsplit"):
            return None  # returns a tuple: writes go through an element, which the target would subscript
        return _view_of_argument(facts, expr.func.value, pos, True, depth + 1)
    return None


def check(ctx):
    for target in ctx.jitted:
        facts = ctx.facts(target.info.node)
        for mutation in all_writes(ctx, facts):
            written = written_tensor(ctx, facts, mutation)
            if written is None:
                continue
            pos = start(mutation.node)
            # x[i] += v: the write goes through the view x[i] (plain x[i] = v is a copy_ into x, not reported)
            through = mutation.kind == "setitem" and isinstance(mutation.stmt, ast.AugAssign)
            arg = _view_of_argument(facts, written, pos, through)
            if arg is None:
                continue
            if through:
                values = Values(ctx, target.info, facts)
                if arg not in values.tensors:
                    continue  # `xs[0] += 1` on a list argument is no tensor view
                if isinstance(written, ast.Name) and indexed_update(values, mutation, arg):
                    continue  # `y[idx] += y[idx]`: an indexed update of the input, no view: TL103's finding
            if not_a_tensor_annotation(facts.annotations.get(arg)):
                continue  # `maxes = the_list[0]; maxes[i] = v` with `the_list: list[list[int]]`: a list
            if not real_input(ctx, target, arg):
                continue  # a helper's argument that its compiled caller computed: no caller sees the write
            yield Finding(
                mutation.node,
                **compiled_message(
                    target,
                    f"{target.subject} writes in place through a view of its input `{arg}`",
                    "the caller sees it; return a new tensor instead",
                    "changes the caller's tensor, and compiled code may replay the write differently from eager PyTorch",
                    TORCH_COMPILE,
                    "TL102",
                ),
            )
