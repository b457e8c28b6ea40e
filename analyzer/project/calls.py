"""What a function calls, from its syntax tree: the project index follows these facts, never the text.

A comment (``# debug_stats(x)``), a string (``"call self.set_matcher(*) first"``) or a docstring names no
call. Each top-level function and method gets its facts in the file's summary, as plain strings:

- ``f:name`` / ``f:mod.func``: a call of a name or a dotted chain (resolved by the index through imports);
- ``s:attr`` / ``s:attr.meth``: ``self.attr(...)`` (a method, or a held submodule's forward) and
  ``self.attr.meth(...)``; ``self.method`` passed as an argument (``checkpoint(self._fwd, x)``) counts as a call;
- ``t:Class:meth``: a method of a value whose class the function states: a parameter's annotation
  (``def next_token(model: GPT)``), ``v = Class(...)``, ``v: Class``, ``isinstance(v, Class)``; ``v(...)`` is
  ``t:Class:forward``;
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


def function_facts(fn, compiling_checks: bool = True) -> tuple[list[str], list[str], dict[str, list[str]], list[str]]:
    """(calls, ``self.<attr>`` names read, attr -> classes ``isinstance(self.attr, C)`` narrows it to, what it
    returns) of a function, nested functions and lambdas included, in one walk; lists sorted (the summary
    is compared and cached). ``compiling_checks``: the file names an ``is_compiling()``-like check (else no
    ``if`` needs asking). Code a compiler never traces is left out: the eager branch of an ``if`` on
    ``is_compiling()``, the body of a nested function under ``@torch.compiler.disable``."""
    types: dict[str, list[str]] = {}  # local name -> the classes the function says it holds
    args = fn.args
    for a in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        if a.annotation is not None:
            classes = annotation_classes(a.annotation)
            if classes:
                types.setdefault(a.arg, []).extend(classes)
    funcs = []  # call targets, classified once every local's type is known
    attrs: set[str] = set()
    calls: set[str] = set()
    narrowed: dict[str, list[str]] = {}
    bound: dict[str, list[str]] = {}  # local -> callees of `local = Callee(...)`
    rets = []  # return statements, of fn and of the functions nested in it (told apart by line)
    nested_spans = []
    fields = {}  # node type -> its child fields (children.py), looked up once per type
    stack = list(fn.body)  # (the decorators and defaults run where the function is defined)
    # after `if torch.compiler.is_compiling(): ... return`, the rest of the block runs only eagerly
    eager_after = after_compiling_returns(fn) if compiling_checks else ()
    while stack:
        node = stack.pop()
        t = type(node)
        if t in _LEAVES:  # names and constants (four nodes in ten), and a dict's ** entry's missing key
            continue
        if eager_after and isinstance(node, ast.stmt) and any(
                lo <= (node.lineno, node.col_offset) <= hi for lo, hi in eager_after):
            continue
        if t is ast.Attribute:
            value = node.value
            if type(value) is ast.Name and value.id in ("self", "cls"):
                attrs.add(node.attr)
                continue
            stack.append(value)
            continue
        if t is ast.Call:
            func = node.func
            funcs.append(func)
            for arg in node.args:
                if type(arg) is ast.Attribute and _is_self(arg.value):
                    if eager_decorator(node):
                        break  # torch.compiler.disable(self.log)(x): run eagerly, not reached
                    calls.add(f"s:{arg.attr}")  # checkpoint(self._forward, x), map(self.block, xs)
            got = isinstance_classes(node) if type(func) is ast.Name and func.id == "isinstance" else None
            if got and isinstance(got[0], ast.Attribute) and _is_self(got[0].value):
                narrowed.setdefault(got[0].attr, []).extend(got[1])
            elif got and isinstance(got[0], ast.Name):
                types.setdefault(got[0].id, []).extend(got[1])
        elif t is ast.Assign:
            target = node.targets[0]
            if type(target) is ast.Attribute and _is_self(target.value) and type(node.value) is ast.Call and eager_decorator(node.value):
                calls.add(f"x:{target.attr}")  # self.fn = torch.compiler.disable(self.fn): self.fn runs eagerly
            if len(node.targets) == 1 and type(node.targets[0]) is ast.Name:
                value = strip_self_returning(node.value)
                name = dotted_name(value.func) if type(value) is ast.Call else None
                if name:
                    bound.setdefault(node.targets[0].id, []).append(name)
                    if name.rsplit(".", 1)[-1][:1].isupper():  # a class by convention: `block = Block(d)`
                        types.setdefault(node.targets[0].id, []).append(name)
        elif t is ast.AnnAssign:
            if type(node.target) is ast.Name:
                types.setdefault(node.target.id, []).extend(annotation_classes(node.annotation))
        elif t is ast.If:
            spans = eager_only_spans(None, [node]) if compiling_checks else None
            if spans:
                eager_body = bool(node.body) and (node.body[0].lineno, node.body[0].col_offset) == spans[0][0]
                stack.append(node.test)
                stack.extend(node.orelse if eager_body else node.body)
                continue
        elif t is ast.Return:
            if node.value is not None:
                rets.append(node)
        elif t in _FUNC:
            nested_spans.append((node.lineno, node.end_lineno))
            if any(eager_decorator(d) for d in node.decorator_list):
                continue
        names = fields.get(t)
        if names is None:
            names = fields[t] = child_fields(t)
        for f in names:
            v = getattr(node, f)
            if type(v) is list:
                stack.extend(v)
            elif v is not None:
                stack.append(v)
    for func in funcs:
        calls.update(_call_refs(func, types))
    own = [r for r in rets if not any(lo <= r.lineno <= hi for lo, hi in nested_spans)]
    return (sorted(calls), sorted(attrs), {k: sorted(set(v)) for k, v in sorted(narrowed.items())},
            _returned(fn, own, bound))


def _returned(fn, returns, bound) -> list[str]:
    """What a factory returns, as references: ``return Net(...)`` / ``return cls(...)`` -> the callee,
    ``m = Net(...); return m`` -> ``Net``, ``return inner`` of a nested ``def inner`` -> ``def:inner``."""
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
    return sorted(set(out))


def _call_refs(func, types) -> list[str]:
    if isinstance(func, ast.Name):
        if func.id in types:
            return [f"t:{c}:forward" for c in types[func.id]]
        return [f"f:{func.id}"]
    if not isinstance(func, ast.Attribute):
        return []
    value = func.value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
        return [f"p:{func.attr}"]
    if _is_self(value):
        return [f"s:{func.attr}"]
    if isinstance(value, ast.Attribute) and _is_self(value.value):
        return [f"s:{value.attr}.{func.attr}"]
    if isinstance(value, ast.Name) and value.id in types:
        return [f"t:{c}:{func.attr}" for c in types[value.id]]
    name = dotted_name(func)
    return [f"f:{name}"] if name else []


def scope_statements(scope):
    """Statements of a function (or module) body, nested blocks included, never nested defs or classes."""
    return own_statements(scope.body)
