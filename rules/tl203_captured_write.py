"""TL203 captured-write: a jitted function assigns or deletes a global or a captured variable."""

from __future__ import annotations

from ._jit_scopes import jitted_scopes
from .compilers import compiled_message
from .base import Finding, RuleInfo

INFO = RuleInfo(
    code="TL203",
    name="captured-write",
    severity="warning",
    summary="A jitted function assigns or deletes a `global` or a `nonlocal` variable from outside it.",
    docs="""\
## What it does
Reports an assignment, augmented assignment or `del` of a name declared `global` inside a jitted
function, or declared `nonlocal` where the variable belongs to a function outside the jitted one.
A nested function writing a `nonlocal` of the jitted function itself is part of the computation and fine.

## Why is this bad?
The write is a side effect on state the compiled function does not own. A trace that is replayed from
the cache does not re-run Python code, so the write happens once (or never) instead of on every call,
and the next call may read the stale value.

## Example
```python
def outer():
    lst = None
    def inner():
        nonlocal lst
        if lst is None:
            lst = []
        lst.append("#")
        return lst
    return thunder.jit(inner)
```

## Use instead
Return the new state and let the caller keep it:
```python
def inner(lst):
    return (lst or []) + ["#"]
```

## Fix safety
There is no automatic fix.

## References
- [lightning-thunder #132: functional jit loading closures sharp edge](https://github.com/Lightning-AI/lightning-thunder/issues/132)
""",
    valid=[
        # the nonlocal belongs to the jitted function itself
        "import thunder\n@thunder.jit\ndef foo():\n    a = 5\n    def bar():\n        nonlocal a\n        del a\n    bar()\n    return 1\n",
        "import thunder\ncounter = 0\n@thunder.jit\ndef f(x):\n    global counter\n    return x\n",
    ],
    invalid=[
        "import thunder\ncounter = 0\n@thunder.jit\ndef f(x):\n    global counter\n    counter += 1\n    return x\n",
        "import thunder\ndef outer():\n    lst = None\n    def inner():\n        nonlocal lst\n        if lst is None:\n"
        "            lst = []\n        lst.append('#')\n        return lst\n    tj = thunder.jit(inner)\n    return tj()\n",
    ],
)


def check(ctx):
    for target, jit_scope in jitted_scopes(ctx):
        for scope in jit_scope.walk():
            for name, node in scope.writes:
                if name in scope.globals:
                    what = "global"
                elif name in scope.nonlocals:
                    owner = scope.parent.owner_of(name) if scope.parent is not None else None
                    if owner is not None and owner.is_within(jit_scope):
                        continue
                    what = "captured"
                else:
                    continue
                yield Finding(
                    node,
                    **compiled_message(
                        target,
                        f"{target.subject} writes the {what} variable `{name}`",
                        "return the new value and assign it outside",
                        "—a cached trace does not repeat this side effect on every call",
                        "replays the write after every call (right results), and guards on the value it reads: "
                        "a recompile whenever it changes",
                        "TL203",
                    ),
                )
