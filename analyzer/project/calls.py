"""What a function calls, from its syntax tree: the project index follows these facts, never the text.

A comment (``# debug_stats(x)``), a string (``"call self.set_matcher(*) first"``) or a docstring names no
call. Each top-level function and method gets its facts in the file's summary, as plain strings:

- ``f:name`` / ``f:mod.func``: a call of a name or a dotted chain (resolved by the index through imports);
- ``s:attr`` / ``s:attr.meth``: ``self.attr(...)`` (a method, or a held submodule's forward) and
  ``self.attr.meth(...)``; ``self.method`` passed as an argument (``checkpoint(self._fwd, x)``) counts as a call;
- ``t:Class:meth``: a method of a value whose class the function states: a parameter's annotation
  (``def next_token(model: GPT)``), ``v = Class(...)``, ``v: Class``, ``isinstance(v, Class)``; ``v(...)`` is
  ``t:Class:forward``;
- ``p:meth``: ``super().meth(...)``.

Code a compiler never traces is left out: the branch of ``if not torch.compiler.is_compiling():`` (and the
``else`` of ``if torch.compiler.is_compiling():``), and nested functions under ``@torch.compiler.disable``.
"""

from __future__ import annotations

import ast

from rules._jit_scopes import eager_decorator
from rules._torch_api import eager_only_spans

from ..static.module_index import dotted_name, strip_self_returning

_FUNC = (ast.FunctionDef, ast.AsyncFunctionDef)
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


def _compiled_children(node):
    """The children of ``node`` a compiler traces: an ``if`` on ``is_compiling()`` loses its eager branch; a
    nested function run eagerly (``@torch.compiler.disable``) loses its body."""
    if isinstance(node, ast.If):
        spans = eager_only_spans(None, [node])
        if spans:
            eager_body = bool(node.body) and (node.body[0].lineno, node.body[0].col_offset) == spans[0][0]
            yield node.test
            yield from (node.orelse if eager_body else node.body)
            return
    elif isinstance(node, _FUNC) and any(eager_decorator(d) for d in node.decorator_list):
        return
    yield from ast.iter_child_nodes(node)


def function_facts(fn) -> tuple[list[str], list[str], dict[str, list[str]], list[str]]:
    """(calls, ``self.<attr>`` names read, attr -> classes ``isinstance(self.attr, C)`` narrows it to, what it
    returns) of a function, nested functions and lambdas included, in one walk; lists sorted (the summary
    is compared and cached)."""
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
    rets = []  # values returned by fn itself (not by its nested functions)
    nested = set()
    stack = [(s, True) for s in fn.body]  # (the decorators and defaults run where the function is defined)
    while stack:
        node, own = stack.pop()
        if isinstance(node, ast.Attribute):
            if _is_self(node.value):
                attrs.add(node.attr)
        elif isinstance(node, ast.Call):
            funcs.append(node.func)
            for arg in node.args:
                if isinstance(arg, ast.Attribute) and _is_self(arg.value):
                    calls.add(f"s:{arg.attr}")  # checkpoint(self._forward, x), map(self.block, xs)
            got = isinstance_classes(node)
            if got and isinstance(got[0], ast.Attribute) and _is_self(got[0].value):
                narrowed.setdefault(got[0].attr, []).extend(got[1])
            elif got and isinstance(got[0], ast.Name):
                types.setdefault(got[0].id, []).extend(got[1])
        elif isinstance(node, ast.Assign):
            if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                value = strip_self_returning(node.value)
                name = dotted_name(value.func) if isinstance(value, ast.Call) else None
                if name:
                    bound.setdefault(node.targets[0].id, []).append(name)
                    if name.rsplit(".", 1)[-1][:1].isupper():  # a class by convention: `block = Block(d)`
                        types.setdefault(node.targets[0].id, []).append(name)
        elif isinstance(node, ast.AnnAssign):
            if isinstance(node.target, ast.Name):
                types.setdefault(node.target.id, []).extend(annotation_classes(node.annotation))
        elif isinstance(node, ast.Return):
            if own and node.value is not None:
                rets.append(strip_self_returning(node.value))
        elif isinstance(node, _FUNC) and own:
            nested.add(node.name)
        inner = own and not isinstance(node, (*_FUNC, ast.Lambda))
        stack.extend((c, inner) for c in _compiled_children(node))
    for func in funcs:
        calls.update(_call_refs(func, types))
    out = []
    for value in rets:
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
    return sorted(calls), sorted(attrs), {k: sorted(set(v)) for k, v in sorted(narrowed.items())}, sorted(set(out))


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
