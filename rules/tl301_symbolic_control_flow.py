"""TL301 symbolic-control-flow: Python control flow on symbolic scalars or shapes of a dynamic compile."""

from __future__ import annotations

import ast

from ._size_specialization import decided_for_sizes_from_two
from ._torch_api import in_spans, only_reports
from ._values import Values, calls_by_name, compile_sites
from .compilers import compiled_message
from .base import Finding, RuleInfo
from .walks import walk

INFO = RuleInfo(
    code="TL301",
    name="symbolic-control-flow",
    severity="warning",
    summary="A function compiled with symbolic/dynamic values branches on a scalar argument or a tensor shape.",
    docs="""\
## What it does
In a function compiled with symbolic values (`thunder.jit(f, cache="symbolic values")`,
`cache=thunder.CACHE_OPTIONS.SYMBOLIC_VALUES`, `torch.compile(f, dynamic=True)`), reports `if`, `while`,
conditional expressions and `range(...)` loop bounds decided by a scalar argument or by a tensor shape: the
places where the trace itself changes with the value. Under plain `torch.compile` (no `dynamic=`), whose
automatic dynamic shapes make a size or int argument symbolic once it changes, it reports `range(...)` loop
bounds on them: each new value recompiles, up to the recompile limit (8), after which the function runs eagerly,
and a dimension marked with `torch._dynamo.mark_dynamic` raises instead; a branch there costs one compile per path
and is not reported, unless a tensor the file passes to the function is marked with `torch._dynamo.mark_dynamic`
(or `mark_unbacked`) first: its marked sizes are symbolic from the first compile, and every decision is reported as
under `dynamic=True`. `min`/`max` of sizes and numbers are not reported:
torch.compile(dynamic=True) computes them symbolically without a recompile
(tests/rules/test_rule_tl301_torch_compile.py runs each reported form and this one under torch.compile). They are reported once per
function, at the first place, with the lines of the others. `is None` checks, flags with a `True`/`False`
default and module attributes such as `self.training` are not symbolic and are not reported; neither are
`assert`s nor `if`s whose branches only raise, warn or log (input validation computes nothing).

The trace check (`analyzer.check(fn, *args)`, and `analyzer.jit(fn, cache="symbolic values", sharp_edges=...)`)
runs the function with symbolic numbers and reports each decision that changed the computation once per
line, naming the constraint the compiled trace now depends on ("`if n > 5:` specializes the trace on
`n > 5`: calls with `n <= 5` trace again"); `assert`s and `if`s that only raise are constraints but not
findings.

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
        # plain torch.compile: a branch on a size costs one compile per path, like any shape guard; `dynamic=False`
        # recompiles per size whatever the code does; a loop over a module attribute is a constant
        "import torch\n@torch.compile\ndef f(x):\n    if x.shape[0] > 4:\n        return x[:4]\n    return x\n",
        "import torch\n@torch.compile(dynamic=False)\ndef f(x):\n    for b in range(x.shape[0]):\n        x[b] = x[b] * 2\n"
        "    return x\n",
        "import torch\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        for _ in range(self.n_layers):\n"
        "            x = x * 2\n        return x\nm = torch.compile(Net())\n",
        # the marked tensor goes to another function: this one's sizes change only through automatic dynamic
        "import torch\n@torch.compile\ndef f(x):\n    if x.shape[0] > 4:\n        return x[:4]\n    return x\n"
        "def g(y):\n    return y * 2\ny = torch.zeros(5)\ntorch._dynamo.mark_dynamic(y, 0)\ng(y)\nf(torch.zeros(5))\n",
        # validation: the branches raise, warn or log, and the trace computes the same values
        "import torch, logging\nlog = logging.getLogger()\n@torch.compile(dynamic=True)\ndef f(x, n):\n"
        "    assert n > 0\n    if x.shape[0] != n:\n        raise ValueError('bad size')\n    if n > 1024:\n"
        "        log.warning('large')\n    return x * 2\n",
        # constant-values caching (the default) specializes on the value: no hazard
        "import thunder, torch\ndef foo(flag):\n    if flag > 5:\n        return torch.ones(1)\n    return torch.zeros(1)\n"
        "jfoo = thunder.jit(foo)\n",
        "import torch\n@torch.compile(dynamic=True)\ndef f(x, mask=None):\n    if mask is not None:\n        x = x * mask\n    return x\n",
        "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        if self.training:\n            return x * 2\n"
        "        return x\nm = torch.compile(M(), dynamic=True)\n",
        # `min` of a number and a size: torch.compile(dynamic=True) keeps it symbolic, no recompile
        "import torch\n@torch.compile(dynamic=True)\ndef f(logits, top_k: int):\n    k = min(top_k, logits.size(-1))\n"
        "    return torch.topk(logits, k)[0]\n",
        # the rank and the dtype are never symbolic, even with dynamic shapes
        "import torch\n@torch.compile(dynamic=True)\ndef f(x):\n    if x.dim() == 4 and x.dtype == torch.float16:\n"
        "        x = x.float()\n    return x\n",
        # sizes 0 and 1 are specialized: a test of whether a size is 0 (or 1) adds no guard under torch.compile
        # (sglang's MoE alignment, speculative decoding; tests/rules/test_rule_tl301_torch_compile.py)
        "import torch\n@torch.compile(dynamic=True)\ndef f(ids):\n    n = ids.reshape(-1).numel()\n    if n == 0:\n"
        "        return ids.new_zeros(1)\n    return ids.sum(0, keepdim=True)\n",
        "import torch\n@torch.compile(dynamic=True)\ndef f(cands, h=None):\n    b, width = cands.shape\n"
        "    k = width - 1\n    if k == 0:\n        return cands[:, 0]\n"
        "    if h is not None and h.shape[0] > 0:\n        return h[0]\n    return cands[:, 1]\n",
    ],
    invalid=[
        # plain torch.compile: automatic dynamic shapes make a changing size symbolic; `range()` over it then
        # recompiles per value up to the recompile limit (issue 31, miss 3)
        "import torch\n@torch.compile\ndef f(x):\n    for b in range(x.shape[0]):\n        x[b] = x[b] * 2\n    return x\n",
        "import torch\nclass Decoder(torch.nn.Module):\n    def forward(self, x, steps: int):\n        for _ in range(steps):\n"
        "            x = x.roll(1, -1)\n        return x\nm = torch.compile(Decoder())\n",
        "import thunder, torch\ndef foo(flag):\n    if flag > 5:\n        return torch.ones(1)\n    return torch.zeros(1)\n"
        "jfoo = thunder.jit(foo, cache=thunder.CACHE_OPTIONS.SYMBOLIC_VALUES)\n",
        "import torch\n@torch.compile(dynamic=True)\ndef f(x):\n    if x.shape[0] > 8:\n        return x[:8]\n    return x\n",
        # an int argument is not specialized at 0 and 1: `n > 0` guards (two graphs for n in 0..3)
        "import torch\n@torch.compile(dynamic=True)\ndef f(x, n: int):\n    if n > 0:\n        return x * n\n    return x\n",
        "import thunder\ndef f(x, n):\n    for i in range(n):\n        x = x + i\n    return x\ng = thunder.jit(f, cache='symbolic values')\n",
        # a shape copied into a tuple or a list holds the same symbolic sizes (lightning-thunder #1525)
        "import thunder, torch\ndef foo(a, b):\n    if tuple(a.shape) == tuple((2, 2)):\n        return a\n    return b\n"
        "jfoo = thunder.jit(foo, cache='symbolic values')\n",
        "import torch\n@torch.compile(dynamic=True)\ndef f(x):\n    if list(x.shape[1:]) == [4, 4]:\n        return x * 2\n"
        "    return x\n",
        # a dimension marked dynamic before the call is symbolic from the first compile (pytorch #122307)
        "import torch\n@torch.compile(fullgraph=True)\ndef f(x):\n    if x.shape[0] > 50:\n        return x + 1\n"
        "    return x + 2\nx = torch.zeros(51)\ntorch._dynamo.mark_dynamic(x, 0)\nf(x)\n",
        "import torch\ndef f(x):\n    if x.size(0) % 8:\n        return x[:8]\n    return x\ncf = torch.compile(f)\n"
        "x = torch.zeros(9)\ntorch._dynamo.mark_dynamic(x, 0)\ncf(x)\n",
        "import torch\ndef run():\n    def f(x):\n        if x.shape[0] > 5:\n            return x.cos()\n        return x.sin()\n"
        "    x = torch.randn(5, 3)\n    torch._dynamo.mark_dynamic(x, 0)\n    torch.compile(dynamic=None)(f)(x)\n",
        # sizes unpacked from a shape are symbolic too (`q_len > 1` alone would cost no guard: size 1 is specialized)
        "import torch\n@torch.compile(dynamic=True)\ndef f(x, verbose: bool = False):\n    bsz, q_len, _ = x.size()\n"
        "    if verbose and q_len > 16:\n        x = x[:, -1:]\n    return x\n",
    ],
)


def _validation_tests(func) -> set[int]:
    """ids of `if` tests whose branches only raise, warn or log (input validation, not computation)."""
    out = set()
    for node in walk(func):
        if isinstance(node, ast.If) and only_reports(node.body) and (not node.orelse or only_reports(node.orelse)):
            out.add(id(node.test))
    return out


def _dynamic_keyword(ctx, target):
    """The `dynamic=` constant of the jit call or decorator that compiles ``target`` in this file (None: not given,
    or compiled elsewhere)."""
    nodes = []
    if target.how == "decorator":
        nodes = [d for d in target.info.node.decorator_list if isinstance(d, ast.Call)]
    elif target.how.startswith("line "):
        line = int(target.how.split()[1])
        stack = list(ctx.tree.body)
        while stack:  # descend only into nodes spanning that line
            node = stack.pop()
            if getattr(node, "lineno", line) <= line <= getattr(node, "end_lineno", line):
                if isinstance(node, ast.Call) and node.lineno == line:
                    nodes.append(node)
                stack.extend(ast.iter_child_nodes(node))
    for call in nodes:
        for kw in call.keywords:
            if kw.arg == "dynamic" and isinstance(kw.value, ast.Constant):
                return kw.value.value
    return None


def _automatic_dynamic(ctx, target) -> bool:
    """Plain `torch.compile` (no `dynamic=`): sizes and int arguments that change become symbolic after the first
    recompile (automatic dynamic shapes), and `mark_dynamic` makes a dimension symbolic at once."""
    return target.compiler == "torch.compile" and _dynamic_keyword(ctx, target) is None


# Marking a dimension dynamic before the call makes it symbolic at the first compile, as dynamic=True does.
_MARKERS = ("mark_dynamic", "mark_unbacked")


def _marked_dynamic(ctx, target) -> bool:
    """Is a tensor passed to ``target`` in this file first marked with `torch._dynamo.mark_dynamic(x, dim)` (or
    `mark_unbacked`)? Its marked sizes are symbolic from the first compile, so a branch on them is one of a
    dynamic compile's decisions (pytorch #122307). The call passes the marked name to the function itself, to a
    name bound to its compile call (``compiled = torch.compile(f)``) or to the compile call's result."""
    if target.elsewhere or not (target.how == "decorator" or target.how.startswith("line ")):
        return False
    marked = _marked_names(ctx)
    if not marked:
        return False
    sites, by_name = compile_sites(ctx), calls_by_name(ctx)
    name = target.info.name
    calls = [c for h in {name} | sites["handles"].get(name, set()) for c in by_name.get(h, ())]
    calls += sites["direct"].get(name, [])
    return any(isinstance(a, ast.Name) and a.id in marked for c in calls for a in c.args)


def _marked_names(ctx) -> frozenset:
    """Names the file passes to `mark_dynamic`/`mark_unbacked` (one walk per file, only when the text has one)."""
    got = ctx.__dict__.get("_marked_names")
    if got is None:
        names = set()
        if any(m in ctx.source.text for m in _MARKERS):
            for node in ast.walk(ctx.tree):
                if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name):
                    func = node.func
                    if (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")) in _MARKERS:
                        names.add(node.args[0].id)
        got = ctx.__dict__["_marked_names"] = frozenset(names)
    return got


def _range_bound(values, test) -> bool:
    return isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "range" \
        and any(values.is_symbolic(a) for a in test.args)


def check(ctx):
    for target in ctx.jitted:
        auto = not target.symbolic and _automatic_dynamic(ctx, target)
        if not target.symbolic and not auto:
            continue
        marked = auto and _marked_dynamic(ctx, target)
        if marked:
            auto = False  # the marked sizes are symbolic at once: every decision on them, as under dynamic=True
        facts = ctx.facts(target.info.node)
        if auto:
            # only `range()` bounds: a branch costs one compile per path (as with dynamic=True), a loop one per value.
            # Scalar arguments are symbolic only in the function the compile call names in this file (a function
            # reached from it, or compiled from another file, may get constants from its callers).
            if not any(kind == "for" for kind, _ in facts.tests):
                continue
            root = target.how == "decorator" or target.how.startswith("line ")
            values = Values(ctx, target.info, facts, scalar_params=root)
            loops = [test for kind, test in facts.tests if kind == "for" and _range_bound(values, test)]
            if loops:
                yield _finding(target, loops[0], "loop bound", loops[1:], auto=True)
            continue
        values = Values(ctx, target.info, facts, scalar_params=not marked and target.symbolic != "sizes")
        validation = None
        found = []  # (node, what): grouped into one finding per function
        for kind, test in facts.tests:
            if kind == "assert":
                continue  # an assert raises or does nothing: the values the trace computes stay the same
            if values.dead_spans and in_spans(test, values.dead_spans):
                continue  # inside a block that no call in the file takes
            if kind == "for":
                decided = _range_bound(values, test)
            else:
                decided = values.decides_on_symbolic(test)
            if decided and kind == "if":
                if validation is None:
                    validation = _validation_tests(target.info.node)
                if id(test) in validation:
                    continue
            if decided and kind != "for" and target.compiler == "torch.compile" \
                    and decided_for_sizes_from_two(values, facts, test):
                continue  # sizes 0 and 1 are specialized: `if x.numel() == 0` costs torch.compile no guard
            if decided:
                found.append((test, _KIND[kind]))
        if not found:
            continue
        found.sort(key=lambda f: (f[0].lineno, f[0].col_offset))
        node, what = found[0]
        yield _finding(target, node, what, [n for n, _ in found[1:]])


def _finding(target, node, what, others, auto=False):
    more = ""
    if others:
        lines = sorted({n.lineno for n in others})
        more = f" (and {len(others)} more in this function, line{'s' if len(lines) > 1 else ''} " \
               f"{', '.join(map(str, lines))})"
    if auto:
        return Finding(
            node,
            **compiled_message(
                target,
                f"{what} decided by a size or int argument in {target.subject}{more}",
                "loop with tensor ops, or keep that value static",
                "—a cached trace may be reused for inputs that take the other path",
                "makes a size or int that changes symbolic after the first recompile (automatic dynamic), and "
                "`range()` then specializes on it: one compile per new value, up to the recompile limit (8), then the "
                "function runs eagerly; a dimension marked with `torch._dynamo.mark_dynamic` raises "
                "ConstraintViolationError instead",
                "TL301",
            ),
        )
    return Finding(
        node,
        **compiled_message(
            target,
            f"{what} decided by a symbolic size or number in {target.subject}{more}",
            "compute both paths as tensor ops, or keep that value static",
            "—a cached trace may be reused for inputs that take the other path",
            "guards on this condition: inputs that take the other path recompile (one compile per path)",
            "TL301",
        ),
    )


_KIND = {"if": "`if`", "while": "`while` loop", "ifexp": "conditional expression", "assert": "`assert`",
         "for": "loop bound"}
