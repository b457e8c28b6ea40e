"""What a function calls, from its syntax tree: the project index follows these facts, never the text.

A comment (``# debug_stats(x)``), a string (``"call self.set_matcher(*) first"``) or a docstring names no
call. Each top-level function and method gets its facts in the file's summary, as plain strings:

- ``f:name`` / ``f:mod.func``: a call of a name or a dotted chain (resolved by the index through imports);
- ``s:attr`` / ``s:attr.meth``: ``self.attr(...)`` (a method, or a held submodule's forward) and
  ``self.attr.meth(...)``; ``self.method`` passed as an argument (``checkpoint(self._fwd, x)``) counts as a call;
- ``t:Class:meth``: a method of a value whose class the function states: a parameter's annotation
  (``def next_token(model: GPT)``), ``v = Class(...)``, ``v: Class``, ``isinstance(v, Class)``; ``v(...)`` is
  ``t:Class:forward``;
- ``n:Class:meth``: the same for a value the function builds itself and keeps to itself (``solver =
  MVNXPB(...); solver.solve()``, the name bound only so and used only for its attributes): the object lives for
  one call of the function;
- ``p:meth``: ``super().meth(...)``;
- ``x:attr``: ``self.attr = torch.compiler.disable(...)``: calls of ``self.attr`` in the class run eagerly.

Code a compiler never traces is left out: the branch of ``if not torch.compiler.is_compiling():`` (and the
``else`` of ``if torch.compiler.is_compiling():``), and nested functions under ``@torch.compiler.disable``.
"""

from __future__ import annotations

import ast

from rules.jit_markers import eager_decorator
from rules.jit_markers import after_compiling_returns, eager_only_spans

from ..static.children import child_fields, own_statements
from ..static.module_index import dotted_name, strip_self_returning

_FUNC = (ast.FunctionDef, ast.AsyncFunctionDef)
_Name, _Attribute, _Subscript, _Call = ast.Name, ast.Attribute, ast.Subscript, ast.Call
_Assign, _Expr = ast.Assign, ast.Expr
_SELF = frozenset({"self", "cls"})
_LEAVES = frozenset({ast.Name, ast.Constant, type(None), ast.Pass, ast.Break, ast.Continue})
# Annotation wrappers that say "this or nothing": their arguments are the value's classes.
_WRAPPERS = frozenset({"Optional", "Union", "Final", "Annotated", "ClassVar"})


def annotation_classes(ann) -> list[str]:
    """Class references an annotation names for the value itself: ``GPT``, ``"GPT"``, ``Optional[KVCache]``,
    ``KVCache | None``, ``Union[A, B]`` (never the items of ``list[Block]``: those are not the value)."""
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        try:
            ann = ast.parse(ann.value.strip(), mode="eval").body
        except SyntaxError:
            return []
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        return annotation_classes(ann.left) + annotation_classes(ann.right)
    if isinstance(ann, ast.Subscript):
        head = dotted_name(ann.value) or ""
        if head.rsplit(".", 1)[-1] not in _WRAPPERS:
            return []
        inner = ann.slice
        items = inner.elts if isinstance(inner, ast.Tuple) else [inner]
        if head.endswith("Annotated"):
            items = items[:1]
        return [c for item in items for c in annotation_classes(item)]
    name = dotted_name(ann)
    if name is None or name == "None":
        return []
    return [name]


def isinstance_classes(call) -> tuple[ast.expr, list[str]] | None:
    """(the value tested, the classes) of ``isinstance(v, C)`` / ``isinstance(v, (A, B))``."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "isinstance"
            and len(call.args) == 2):
        return None
    kinds = call.args[1]
    items = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
    return call.args[0], [n for n in (dotted_name(i) for i in items) if n]


def _is_self(node) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


# The key on a function node where function_facts says whether the function may store into self.<attr> (False:
# it walked every statement and saw no such store). Its walk of a method then answers held_classes (submodules.py).
SELF_STORES = "_thunder_self_stores"


def stores_in_self(targets) -> bool:
    """Does any target store into ``self.<attr>`` (or ``self.<attr>[key]``)?"""
    for t in targets:
        if type(t) is _Subscript:
            t = t.value
        if type(t) is _Attribute and type(t.value) is _Name and t.value.id == "self":
            return True
    return False


def function_facts(fn, compiling_checks: bool = True) -> tuple[list[str], list[str], dict[str, list[str]], list[str]]:
    """(calls, ``self.<attr>`` names read, attr -> classes ``isinstance(self.attr, C)`` narrows it to, what it
    returns) of a function, nested functions and lambdas included, in one walk; lists sorted (the summary
    is compared and cached). ``compiling_checks``: the file names an ``is_compiling()``-like check (else no
    ``if`` needs asking). Code a compiler never traces is left out: the eager branch of an ``if`` on
    ``is_compiling()``, the body of a nested function under ``@torch.compiler.disable``.

    The walk runs once per function of every linted file (half of a summary's time): the frequent nodes
    (attribute chains, calls, assignments) are taken apart inline, a chain's names are never pushed, and a
    call's reference is spelled while its callee's chain is walked, once (the order nodes are met in is no
    fact: every answer is a set, sorted)."""
    types: dict[str, list[str]] = {}  # local name -> the classes the function says it holds
    args = fn.args
    for a in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        if a.annotation is not None:
            classes = annotation_classes(a.annotation)
            if classes:
                types.setdefault(a.arg, []).extend(classes)
    named = []  # `name(...)`: a call, or the forward of a value of a stated class (known once the walk is done)
    on_name = []  # (name, method) of `name.method(...)`: likewise
    attrs: set[str] = set()
    calls: set[str] = set()
    narrowed: dict[str, list[str]] = {}
    bound: dict[str, list[str]] = {}  # local -> callees of `local = Callee(...)`
    rets = []  # return statements, of fn and of the functions nested in it (told apart by line)
    stores = False  # an assignment to self.<attr> (or self.<attr>[k]) seen, or a statement left unseen
    nested_spans = []
    stack = list(fn.body)  # (the decorators and defaults run where the function is defined)
    pop, push, extend = stack.pop, stack.append, stack.extend
    # after `if torch.compiler.is_compiling(): ... return`, the rest of the block runs only eagerly
    eager_after = after_compiling_returns(fn) if compiling_checks else ()
    while stack:
        node = pop()
        t = type(node)
        if t in _LEAVES:  # names and constants, and a dict's ** entry's missing key
            continue
        if eager_after and isinstance(node, ast.stmt) and any(
                lo <= (node.lineno, node.col_offset) <= hi for lo, hi in eager_after):
            stores = True  # (not seen: it may store)
            continue
        if t is _Attribute:  # `a.b.c` (not called): down the chain to its root; `self.x` reads x
            value = node.value
            while type(value) is _Attribute:
                node = value
                value = node.value
            if type(value) is _Name:
                if value.id in _SELF:
                    attrs.add(node.attr)
            else:
                push(value)
            continue
        if t is _Call:
            func = node.func
            tf = type(func)
            if tf is _Name:
                named.append(func.id)
                if func.id == "isinstance":
                    got = isinstance_classes(node)
                    if got and isinstance(got[0], ast.Attribute) and _is_self(got[0].value):
                        narrowed.setdefault(got[0].attr, []).extend(got[1])
                    elif got and isinstance(got[0], ast.Name):
                        types.setdefault(got[0].id, []).extend(got[1])
            elif tf is _Attribute:
                _callee(func, calls, on_name, attrs, push)
            else:  # `f(x)(y)`, `fns[i](x)`: no reference, its parts are walked
                push(func)
            node_args = node.args
            for arg in node_args:
                if type(arg) is _Attribute and _is_self(arg.value):
                    if eager_decorator(node):
                        break  # torch.compiler.disable(self.log)(x): run eagerly, not reached
                    calls.add(f"s:{arg.attr}")  # checkpoint(self._forward, x), map(self.block, xs)
            extend(node_args)
            for kw in node.keywords:
                push(kw.value)
            continue
        if t is _Assign:
            targets = node.targets
            target = targets[0]
            value = node.value
            tt = type(target)
            if tt is _Attribute and type(value) is _Call and _is_self(target.value) and eager_decorator(value):
                calls.add(f"x:{target.attr}")  # self.fn = torch.compiler.disable(self.fn): self.fn runs eagerly
            if not stores:
                stores = stores_in_self(targets)
            if tt is _Name and len(targets) == 1:
                made = strip_self_returning(value)
                name = dotted_name(made.func) if type(made) is _Call else None
                if name:
                    bound.setdefault(target.id, []).append(name)
                    if name.rsplit(".", 1)[-1][:1].isupper():  # a class by convention: `block = Block(d)`
                        types.setdefault(target.id, []).append(name)
            extend(targets)
            push(value)
            continue
        if t is _Expr:
            push(node.value)
            continue
        if t is ast.AnnAssign:
            if type(node.target) is _Name:
                types.setdefault(node.target.id, []).extend(annotation_classes(node.annotation))
            elif not stores:
                stores = stores_in_self((node.target,))
        elif t is ast.If:
            spans = eager_only_spans(None, [node]) if compiling_checks else None
            if spans:
                stores = True  # (the eager branch is not walked: it may store)
                eager_body = bool(node.body) and (node.body[0].lineno, node.body[0].col_offset) == spans[0][0]
                push(node.test)
                extend(node.orelse if eager_body else node.body)
                continue
        elif t is ast.Return:
            if node.value is not None:
                rets.append(node)
        elif t in _FUNC:
            nested_spans.append((node.lineno, node.end_lineno))
            if any(eager_decorator(d) for d in node.decorator_list):
                stores = True
                continue
        for f in child_fields(t):
            v = getattr(node, f)
            if type(v) is list:
                extend(v)
            elif v is not None:
                push(v)
    for name in set(named):
        got = types.get(name)
        if got is not None:
            calls.update([f"t:{c}:forward" for c in got])
        else:
            calls.add(f"f:{name}")
    own = _kept_to_itself(fn, {n for n, _ in on_name if n in types}, bound, types) if on_name and bound else ()
    for name, meth in set(on_name):
        got = types.get(name)
        if got is not None:
            kind = "n" if name in own else "t"
            calls.update([f"{kind}:{c}:{meth}" for c in got])
        else:
            calls.add(f"f:{name}.{meth}")
    # held_classes reads a method other than __init__ only for its stores into self.<attr>: it skips one with none
    fn.__dict__[SELF_STORES] = stores
    own = [r for r in rets if not any(lo <= r.lineno <= hi for lo, hi in nested_spans)]
    return (sorted(calls), sorted(attrs), {k: sorted(set(v)) for k, v in sorted(narrowed.items())},
            _returned(fn, own, bound))


def _kept_to_itself(fn, names: set, bound: dict, types: dict) -> set:
    """Of ``names``, those the function builds itself (every binding ``name = Class(...)``, no parameter) and
    uses only for their attributes (``name.step``, ``name.solve()``): never stored, passed, returned or yielded,
    so the object lives for one call of the function (a solver it steps). Nested functions count as uses."""
    args = fn.args
    params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a}
    cand = {n for n in names if n not in params and bound.get(n) and len(types.get(n, ())) == len(bound[n])}
    if not cand:
        return set()
    stores, loads, as_receiver = {}, {}, {}
    for node in ast.walk(fn):
        t = type(node)
        if t is _Name and node.id in cand:
            d = stores if type(node.ctx) is ast.Store else loads
            d[node.id] = d.get(node.id, 0) + 1
        elif t is _Attribute and type(node.value) is _Name and node.value.id in cand:
            as_receiver[node.value.id] = as_receiver.get(node.value.id, 0) + 1
        elif t in (ast.Global, ast.Nonlocal) and cand.intersection(node.names):
            return set()
    # every store is one of the `name = Class(...)` bindings; every load is the receiver of an attribute
    return {n for n in cand if stores.get(n, 0) == len(bound[n]) and loads.get(n, 0) == as_receiver.get(n, 0)}


def _callee(func, calls: set, on_name: list, attrs: set, push) -> None:
    """The reference of a call of ``func`` (an attribute chain), and the walk's part of the chain: ``self.x.m``
    reads ``x``; a root that is no name (``f(x).m``, ``x[0].m``) is walked on."""
    meth = func.attr
    value = func.value
    tv = type(value)
    if tv is _Name:
        if value.id in _SELF:
            attrs.add(meth)
            calls.add(f"s:{meth}")
        else:
            on_name.append((value.id, meth))  # a value of a stated class, or a module's function
        return
    if tv is not _Attribute:
        if tv is _Call and type(value.func) is _Name and value.func.id == "super":
            calls.add(f"p:{meth}")
        push(value)
        return
    inner = value.value
    if type(inner) is _Name and inner.id in _SELF:
        attrs.add(value.attr)
        calls.add(f"s:{value.attr}.{meth}")
        return
    parts = [meth, value.attr]
    node = value
    while type(inner) is _Attribute:
        parts.append(inner.attr)
        node = inner
        inner = inner.value
    if type(inner) is _Name:
        if inner.id in _SELF:
            attrs.add(node.attr)
        parts.append(inner.id)
        parts.reverse()
        calls.add("f:" + ".".join(parts))
    else:
        push(inner)


def _returned(fn, returns, bound) -> list[str]:
    """What a factory returns, as references: ``return Net(...)`` / ``return cls(...)`` -> the callee,
    ``m = Net(...); return m`` -> ``Net``, ``return inner`` of a nested ``def inner`` -> ``def:inner``, and
    ``return inner, state`` -> ``def:inner@0`` (the item's position in the returned tuple)."""
    out = []
    nested = {s.name for s in fn.body if isinstance(s, _FUNC)}
    for s in returns:
        value = strip_self_returning(s.value)
        if isinstance(value, ast.Call):
            name = dotted_name(value.func)
            if name:
                out.append(name)
            elif isinstance(value.func, ast.Call) and dotted_name(value.func.func) == "type":
                out.append("cls")  # type(self)(...)
        elif isinstance(value, ast.Name):
            if value.id in nested:
                out.append(f"def:{value.id}")
            out.extend(bound.get(value.id, ()))
        elif isinstance(value, ast.Tuple):  # `return step, state`: a nested def at its position in the tuple
            out.extend(f"def:{e.id}@{i}" for i, e in enumerate(value.elts) if isinstance(e, ast.Name) and e.id in nested)
    return sorted(set(out))


def scope_statements(scope):
    """Statements of a function (or module) body, nested blocks included, never nested defs or classes."""
    return own_statements(scope.body)
