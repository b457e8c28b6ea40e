"""TL203 captured-write: a jitted function assigns or deletes a global or a captured variable."""

from __future__ import annotations

import ast

from ._globals import MUTATORS, change_of, is_data_global
from ._jit_scopes import eager_only_spans_of, jitted_scopes
from ._torch_api import in_spans
from .compilers import compiled_message
from .base import Finding, RuleInfo
from .walks import walk

INFO = RuleInfo(
    code="TL203",
    name="captured-write",
    severity="warning",
    summary="A jitted function assigns or deletes a `global` or a `nonlocal` variable from outside it.",
    docs="""\
## What it does
Reports an assignment, augmented assignment or `del` of a name declared `global` inside a jitted
function, or declared `nonlocal` where the variable belongs to a function outside the jitted one; a write
into the object a module global names (`_stats["n"] += 1`, `_seen.append(n)`, `_state.step = n`) or into a
module-level class's attribute (`Recorder.seen.append(x)`); and a call of an enclosing function's nested
function that makes such a write (`bump()` with `nonlocal count`), reported at the write, as is a write into an
object a variable of that enclosing function holds (`state["n"] += 1`, `seen.append(n)`) made by such a function
or by a method of a class defined there and called on a new instance (`Touch().touch()`).
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
        # a custom operator's body runs as one opaque op, eagerly at every call (unsloth's bounded matmul)
        "import torch\n_budget = {}\n@torch.library.custom_op('demo::op', mutates_args=())\n"
        "def op(x: torch.Tensor) -> torch.Tensor:\n    _budget.pop('k', None)\n    return x.clone()\n"
        "@torch.compile\ndef f(x):\n    return op(x) * 2\n",
        # after `if torch.compiler.is_compiling(): ... return`, the rest runs only eagerly (unsloth's custom-op dispatch)
        "import torch\n_budget = {}\ndef _eager(x):\n    _budget.pop('k', None)\n    return x\n"
        "@torch.compile\ndef f(x):\n    if torch.compiler.is_compiling():\n        return x * 2\n    return _eager(x)\n",
        # the compiled function's own dict, and a module's configuration namespace
        "import torch\nimport numpy as np\n@torch.compile\ndef f(x):\n    stats = {}\n    stats['n'] = 1\n"
        "    np.seterr(all='ignore')\n    return x * stats['n']\n",
        # a helper's nonlocal belongs to a function the compiled one defines: part of the computation
        "import torch\n@torch.compile\ndef f(x):\n    n = 0\n    def bump():\n        nonlocal n\n        n += 1\n"
        "    bump()\n    return x * n\n",
        # the nonlocal belongs to the jitted function itself
        "import thunder\n@thunder.jit\ndef foo():\n    a = 5\n    def bar():\n        nonlocal a\n        del a\n    bar()\n    return 1\n",
        "import thunder\ncounter = 0\n@thunder.jit\ndef f(x):\n    global counter\n    return x\n",
        # a helper of the enclosing function filling an object the compiled code made and passed to it
        "import torch\ndef make():\n    def fill(buf, n):\n        buf.append(n)\n    class Box:\n"
        "        def put(self, n):\n            self.items = [n]\n    @torch.compile\n    def step(x):\n        out = []\n"
        "        fill(out, 1)\n        Box().put(2)\n        return x + len(out)\n    return step\n",
        # a class attribute read (not written), and a warn-once flag set on the class
        "import torch, warnings\nclass Cfg:\n    table = {'a': 1}\n    warned = False\n@torch.compile\ndef f(x, k):\n"
        "    if not Cfg.warned:\n        warnings.warn('slow path')\n        Cfg.warned = True\n"
        "    return x * Cfg.table[k]\n",
    ],
    invalid=[
        "import thunder\ncounter = 0\n@thunder.jit\ndef f(x):\n    global counter\n    counter += 1\n    return x\n",
        # a class attribute's list, shared by every call and instance, filled by the compiled forward (pytorch #169253)
        "import torch\nclass Recorder(torch.nn.Module):\n    seen = []\n    def forward(self, x):\n"
        "        Recorder.seen.append(x)\n        return x * 2\nm = torch.compile(Recorder())\n",
        "import torch\nclass Stats:\n    counts = {}\n@torch.compile\ndef f(x, k):\n    Stats.counts[k] = x.shape[0]\n"
        "    return x\n",
        # a module-level container written inside compiled code: a write, not only a read (issue 31)
        "import torch\n_stats = {'n': 0}\n@torch.compile\ndef f(x):\n    _stats['n'] += 1\n    return x * 2\n",
        "import torch\n_seen = []\ndef record(x):\n    _seen.append(x.shape[0])\n@torch.compile\ndef f(x):\n"
        "    record(x)\n    return x * 2\n",
        # a class attribute's list filled inside compiled code (pytorch's `Recorder.seen.append(x)` report)
        "import torch\nfrom torch import nn\nclass Recorder(nn.Module):\n    seen = []\n    def forward(self, x):\n"
        "        Recorder.seen.append(x)\n        return x * 2\nm = torch.compile(Recorder())\n",
        # a nested function the compiled function calls writes a variable of the enclosing function
        "import torch\ndef make():\n    count = 0\n    def bump():\n        nonlocal count\n        count += 1\n"
        "    @torch.compile\n    def f(x):\n        bump()\n        return x * 2\n    return f\n",
        "import thunder\ndef outer():\n    lst = None\n    def inner():\n        nonlocal lst\n        if lst is None:\n"
        "            lst = []\n        lst.append('#')\n        return lst\n    tj = thunder.jit(inner)\n    return tj()\n",
        # a method of a class defined in the enclosing function writes into its captured dict (pytorch #197896)
        "import torch\ndef make():\n    state = {'n': 0}\n    class Touch:\n        def touch(self):\n"
        "            state['n'] += 1\n    @torch.compile\n    def step(x):\n        Touch().touch()\n        return x + 1\n"
        "    return step\n",
        "import torch\ndef make():\n    seen = []\n    def record(n):\n        seen.append(n)\n    @torch.compile\n"
        "    def step(x):\n        record(x.shape[0])\n        return x + 1\n    return step\n",
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
                yield _finding(target, node, f"writes the {what} variable `{name}`")
        yield from _object_writes(ctx, target, jit_scope)
        yield from _called_closure_writes(ctx, target, jit_scope)
        yield from _captured_object_writes(ctx, target, jit_scope)
        yield from _class_attribute_writes(ctx, target, jit_scope)


def _object_writes(ctx, target, jit_scope):
    """``_stats["n"] += 1``, ``_cache.append(x)``, ``_state.step = n`` on a module global: a write of state the
    compiled function does not own, as much as a ``global`` assignment is."""
    changed = {}
    for node in walk(jit_scope.node):
        kind = type(node)
        if kind in _STORES:  # (most nodes are neither a store nor a call: tested by type first)
            for t in _store_targets(node):
                got = change_of(t) or _class_attribute_change(ctx, t)
                if got:
                    changed[id(got[0])] = (t, got)
        elif kind is ast.Call:
            got = change_of(node) or _class_attribute_change(ctx, node)
            if got:
                changed[id(got[0])] = (node, got)
    if not changed:
        return
    eager_only = eager_only_spans_of(ctx, jit_scope)  # `if not torch.compiler.is_compiling():` runs eagerly
    seen = set()
    for scope in jit_scope.walk():
        for name_node in scope.loads:
            hit = changed.get(id(name_node))
            name = name_node.id
            if hit is None or name in seen or scope.owner_of(name) is not None:
                continue
            if eager_only and in_spans(hit[0], eager_only):
                continue
            node, (_, attr, how) = hit
            if how.startswith("class "):  # `Recorder.seen.append(x)`: state of a module-level class
                seen.add(name)
                what = {"class item": "an item of", "class call": "into"}.get(how, "")
                yield _finding(target, node, f"writes {what + ' ' if what else ''}the class attribute `{name}.{attr}`")
                continue
            if not is_data_global(ctx.index, name):
                continue
            seen.add(name)
            what = {"item": "an item of", "attribute": f"the attribute `{attr}` of", "call": "into"}[how]
            yield _finding(target, node, f"writes {what} the module global `{name}`")


def _class_attribute_change(ctx, node):
    """``Cls.seen.append(x)``, ``Cls.cache[k] = v``, ``Cls.count += 1`` where ``Cls`` is a class of this module:
    (the class's Name, the attribute, "class item" | "class call" | "class attribute"), else None."""
    how = "class attribute"
    if isinstance(node, ast.Subscript):
        node, how = node.value, "class item"
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
        node, how = node.func.value, "class call"
    elif isinstance(node, ast.Call):
        return None
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
            ctx.index.bindings.get(node.value.id) == ["class"]:
        return node.value, node.attr, how
    return None


_STORES = frozenset({ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete})


def _store_targets(node):
    if isinstance(node, ast.Assign):
        yield from node.targets
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        yield node.target
    elif isinstance(node, ast.Delete):
        yield from node.targets


def _called_closure_writes(ctx, target, jit_scope):
    """A function of an enclosing scope that the compiled function calls (``bump()``) runs compiled: its
    ``nonlocal``/``global`` writes of variables outside the compiled function are the compiled function's."""
    reported = set()
    for scope in jit_scope.walk():
        for call in scope.calls:
            if not isinstance(call.func, ast.Name):
                continue
            owner = scope.owner_of(call.func.id)
            if owner is None or owner.is_within(jit_scope):
                continue
            for helper in owner.children:
                if getattr(helper.node, "name", None) != call.func.id or helper.kind != "function":
                    continue
                for inner in helper.walk():
                    for name, node in inner.writes:
                        if name in inner.nonlocals:
                            var_owner = inner.parent.owner_of(name) if inner.parent is not None else None
                            if var_owner is not None and (var_owner.is_within(helper) or var_owner.is_within(jit_scope)):
                                continue
                        elif name not in inner.globals:
                            continue
                        kind = "global" if name in inner.globals else "captured"
                        if id(node) in reported:
                            break
                        reported.add(id(node))
                        # at the write, where it is fixed (the call may be one of several reaching it)
                        yield _finding(target, node, f"writes the {kind} variable `{name}` here, in code it runs through "
                                                     f"`{call.func.id}` (line {call.lineno})")
                        break
                    else:
                        continue
                    break


def _reached_helpers(jit_scope):
    """(helper scope, the call) for code of an enclosing scope that the compiled function runs: a function it calls
    by name (``bump()``) and a method of a class defined there, called on a new instance (``Touch().touch()``,
    ``t = Touch(); t.touch()``)."""
    for scope in jit_scope.walk():
        # `t = Touch()` in the compiled code: t -> Touch, found on first need by one walk of the scope, and only where
        # the scope calls a class some enclosing function defines (the only classes the lookup below accepts)
        made = None if _calls_local_class(scope, jit_scope) else {}
        for call in scope.calls:
            func = call.func
            if isinstance(func, ast.Name):
                cls, method = None, func.id
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) and isinstance(func.value.func, ast.Name):
                cls, method = func.value.func.id, func.attr
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                    and func.value.id in (made := made if made is not None else _instances_made(scope)):
                cls, method = made[func.value.id], func.attr
            else:
                continue
            owner = scope.owner_of(cls or method)
            if owner is None or owner.is_within(jit_scope):
                continue
            for child in owner.children:
                if cls is None and child.kind == "function" and getattr(child.node, "name", None) == method:
                    yield child, call
                elif cls is not None and child.kind == "class" and child.node.name == cls:
                    for m in child.children:
                        if m.kind == "function" and getattr(m.node, "name", None) == method:
                            yield m, call


def _calls_local_class(scope, jit_scope) -> bool:
    """Does ``scope``'s own code call, by name, a class that a function around ``jit_scope`` defines?"""
    for call in scope.calls:
        func = call.func
        if isinstance(func, ast.Name):
            owner = scope.owner_of(func.id)
            if owner is not None and not owner.is_within(jit_scope) and any(
                    c.kind == "class" and c.node.name == func.id for c in owner.children):
                return True
    return False


def _instances_made(scope) -> dict:
    """``t = Touch(...)`` in ``scope``'s own code: {"t": "Touch"}."""
    made = {}
    for node in _own_nodes(scope):
        if type(node) is ast.Assign and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    made[t.id] = node.value.func.id
    return made


_OWN_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp,
               ast.DictComp, ast.GeneratorExp)


def _own_nodes(scope):
    """The nodes of ``scope``'s own code (nested functions, classes and comprehensions are scopes of their own)."""
    stack = list(ast.iter_child_nodes(scope.node))
    while stack:
        node = stack.pop()
        if isinstance(node, _OWN_SCOPES):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _captured_object_writes(ctx, target, jit_scope):
    """``state["n"] += 1`` (or ``.append``, ``.attr = v``) into an object a variable of an enclosing function
    holds, made by code of that function which the compiled function runs (pytorch #197896: a method of a class
    defined there, called on a new instance inside the compiled code; the mutation was silently dropped)."""
    reported, walked = set(), set()
    for helper, call in _reached_helpers(jit_scope):
        if id(helper) in walked:
            continue  # a helper called again: its writes are reported once, at the first call
        walked.add(id(helper))
        for inner in helper.walk():
            for node in _own_nodes(inner):
                if type(node) in _STORES:
                    changes = [change_of(t) for t in _store_targets(node)]
                elif type(node) is ast.Call:
                    changes = [change_of(node)]
                else:
                    continue
                for got in changes:
                    if not got or got[0].id in ("self", "cls"):
                        continue
                    owner = inner.owner_of(got[0].id)
                    if owner is None or owner.is_within(helper) or owner.is_within(jit_scope) or id(node) in reported:
                        continue  # a module global (the other checks), or the helper's or compiled code's own
                    reported.add(id(node))
                    what = {"item": "an item of", "attribute": f"the attribute `{got[1]}` of", "call": "into"}[got[2]]
                    method = isinstance(call.func, ast.Attribute)
                    yield _finding(target, node, f"writes {what} the captured variable `{got[0].id}` here, in code it "
                                                 f"runs through `{ast.unparse(call.func)}` (line {call.lineno})",
                                   DROPPED_TORCH_COMPILE if method else REPLAYED_TORCH_COMPILE)


# What torch.compile (2.13) does with the write: tests/rules/test_rule_tl203_torch_compile.py runs both.
REPLAYED_TORCH_COMPILE = ("replays the write after every call (right results), and guards on the value it reads: "
                          "a recompile whenever it changes")
DROPPED_TORCH_COMPILE = ("drops the write when a method of a class made inside the compiled code makes it: the "
                         "captured object keeps its old contents, with no error or graph break (pytorch #197896)")


def _finding(target, node, subject, torch_compile=REPLAYED_TORCH_COMPILE):
    return Finding(
        node,
        **compiled_message(
            target,
            f"{target.subject} {subject}",
            "return the new value and assign it outside",
            "—a cached trace does not repeat this side effect on every call",
            torch_compile,
            "TL203",
        ),
    )


def _class_attribute_of(node):
    """(class Name, attribute, how) for ``C.seen.append(x)``, ``C.cache[k] = v``, ``C.count += 1``'s target: writes
    into the object a class attribute holds, or an update of it; None otherwise. A plain ``C.flag = True`` is left
    out (warn-once flags are set so, and torch.compile replays them)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
        held, how = node.func.value, "into"
    elif isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
        held, how = node.value, "an item of"
    elif isinstance(node, ast.AugAssign):
        held, how = node.target, "an update of"
    else:
        return None
    if isinstance(held, ast.Attribute) and isinstance(held.value, ast.Name):
        return held.value, held.attr, how
    return None


_CLASS_WRITES = frozenset({ast.Call, ast.Subscript, ast.AugAssign})  # what _class_attribute_of looks at


def _class_attribute_writes(ctx, target, jit_scope):
    """``Recorder.seen.append(x)`` in a compiled forward, with ``seen = []`` a class attribute of a module-level
    class: state shared by every call (and every instance), written as a module global's object is."""
    hits = {}
    for node in walk(jit_scope.node):
        if type(node) not in _CLASS_WRITES:
            continue
        got = _class_attribute_of(node)
        if got:
            if ctx.index.bindings.get(got[0].id) == ["class"]:
                hits.setdefault(id(got[0]), (node, got))
    if not hits:
        return
    eager_only = eager_only_spans_of(ctx, jit_scope)
    seen = set()
    for scope in jit_scope.walk():
        for name_node in scope.loads:
            hit = hits.get(id(name_node))
            if hit is None or scope.owner_of(name_node.id) is not None:
                continue
            node, (cls, attr, how) = hit
            if (cls.id, attr) in seen or (eager_only and in_spans(node, eager_only)):
                continue
            seen.add((cls.id, attr))
            yield _finding(target, node, f"writes {how} the class attribute `{cls.id}.{attr}`, shared by every call")
