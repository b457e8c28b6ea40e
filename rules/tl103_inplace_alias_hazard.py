"""TL103 inplace-alias-hazard: a jitted function writes into an input in place and reads it again."""

from __future__ import annotations

import ast

from ._torch_api import end, start, written_tensor
from ._values import Values
from .compilers import compiled_message
from .base import Finding, RuleInfo

INFO = RuleInfo(
    code="TL103",
    name="inplace-alias-hazard",
    severity="warning",
    summary="A jitted function writes an input in place and then reads it again (or writes it twice).",
    docs="""\
## What it does
Inside a jitted function, reports an in-place write into a function argument (`q.index_copy_(...)`,
`k += v`, `out=q`) when the same argument is read again, or written again, later in the function. The
trace check (`analyzer.check`, `analyzer.jit`) walks the traced call as the functionalization does: it
reports each input (arguments, module parameters and buffers) that one op writes and a later op reads,
views of the input included, at the first write, and lists eager's order of those writes and reads.
Stores that do not read the input (`out[:, i] = v`, `index_copy_`) and returning the input are no reads.

## Why is this bad?
A compiler functionalizes the write (computes a new tensor) and copies the result back into the input
buffer at some point of the fused region. Reads of the input after the write must see the new values,
and two write-backs into one buffer must happen in order. When the compiler reorders the copy-back, or
lets the copy's destination alias its source, a later read sees the wrong memory (lightning-thunder #1193:
`q.index_copy_` followed by attention over `q`).

## Example
```python
@partial(thunder.jit, disable_inplace_copy_check=True)
def f(q, k, v, mask, idx, src):
    q.index_copy_(2, idx, src)
    k.index_copy_(2, idx, src)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, mask)
```

## Use instead
Use the out-of-place op and the new tensor:
```python
@thunder.jit
def f(q, k, v, mask, idx, src):
    q2 = q.index_copy(2, idx, src)
    k2 = k.index_copy(2, idx, src)
    return torch.nn.functional.scaled_dot_product_attention(q2, k2, v, mask)
```

## Fix safety
There is no automatic fix.

## References
- [lightning-thunder #1193: prims.copy_to_out_](https://github.com/Lightning-AI/lightning-thunder/pull/1193)
""",
    valid=[
        # the out-parameter idiom: the written input is only returned
        "import torch\n@torch.compile\ndef f(result, x, w):\n    result += x @ w\n    return result\n",
        # disjoint slices written in a loop, never read
        "import torch\n@torch.compile\ndef f(out: torch.Tensor, xs, n: int):\n    for i in range(n):\n"
        "        out[:, i] = xs[i] * 2\n    return out\n",
        "import thunder, torch\n@thunder.jit\ndef f(q, idx, src):\n    q2 = q.index_copy(2, idx, src)\n    return q2.sum()\n",
        # written once and never read again
        "import thunder\n@thunder.jit\ndef f(x, y):\n    x.add_(y)\n",
        # not jitted
        "import torch\ndef f(q, idx, src):\n    q.index_copy_(2, idx, src)\n    return q.sum()\n",
    ],
    invalid=[
        # read again inside a loop: the next iteration reads what the write-back must already have stored
        "import torch\n@torch.compile\ndef blend(a: torch.Tensor, b: torch.Tensor, n: int):\n    for y in range(n):\n"
        "        b[:, y] = a[:, -n + y] * (1 - y / n) + b[:, y] * (y / n)\n    return b\n",
        "import torch\nimport thunder\nfrom functools import partial\n\n"
        "@partial(thunder.jit, disable_inplace_copy_check=True)\ndef f(q, k, v, mask, idx, src):\n"
        "    q.index_copy_(2, idx, src)\n    k.index_copy_(2, idx, src)\n"
        "    return torch.nn.functional.scaled_dot_product_attention(q, k, v, mask)\n",
        "import torch\n@torch.compile\ndef f(x, y):\n    x += y\n    x.mul_(2)\n",
    ],
)


def _only_returned(func, facts, name, after, loop) -> bool:
    """Are all the later uses of ``name`` a plain ``return name``? Returning the written input reads no
    memory inside the compiled region, so no reordered write-back can be seen."""
    returned = set()
    for n in ast.walk(func):
        if isinstance(n, ast.Return) and isinstance(n.value, ast.Name) and n.value.id == name:
            returned.add((n.value.lineno, n.value.col_offset))
        elif isinstance(n, ast.Assign):
            # `out[:, i:j] = v` in a loop stores into `out` without reading it
            for t in n.targets:
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == name:
                    returned.add((t.value.lineno, t.value.col_offset))
    if not returned:
        return False
    later = [p for p in facts.loads.get(name, ()) if p > after and facts.reachable(after, p)]
    if loop is not None:
        lo, hi = (loop.lineno, loop.col_offset), (loop.end_lineno, loop.end_col_offset)
        later += [p for p in facts.loads.get(name, ()) if lo <= p <= hi]
    return all(p in returned for p in later)


def check(ctx):
    for target in ctx.jitted:
        facts = ctx.facts(target.info.node)
        values = None
        reported = set()
        for mutation in facts.mutations:
            written = written_tensor(ctx, facts, mutation)
            if not isinstance(written, ast.Name) or written.id in reported or written.id in ("self", "cls"):
                continue
            if facts.binding_at(written.id, start(mutation.node)) != "param":
                continue
            if mutation.kind == "setitem" and isinstance(mutation.stmt, ast.AugAssign):
                continue  # `x[i] += v` writes through the view x[i]: TL102's finding
            name = written.id
            if mutation.kind in ("augassign", "setitem"):
                values = values or Values(ctx, target.info, facts)
                if name not in values.tensors:
                    continue  # `n += 1` on a number rebinds; `kwargs["k"] = v` writes a dict, not a tensor
            if not facts.read_after(name, end(mutation.stmt), mutation.loop):
                continue
            if _only_returned(target.info.node, facts, name, end(mutation.stmt), mutation.loop):
                continue  # `x += y; return x`: the out-parameter idiom; no read sees the write-back
            reported.add(name)
            yield Finding(
                mutation.node,
                **compiled_message(
                    target,
                    f"{target.subject} writes its input `{name}` in place and uses it again",
                    "use the out-of-place op and its result",
                    f"—the compiler must copy the result back into `{name}` before that use, and reordered or "
                    f"aliased write-backs make it read the wrong memory",
                    "functionalizes the writes and copies the result back once (the cost: an extra copy of the input)",
                    "TL103",
                ),
            )
