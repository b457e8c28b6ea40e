"""In-place writes spelled as an option (issue 31): ``F.relu(x, inplace=True)``, ``F.silu(x, inplace=True)``, and
calls of a module built with ``inplace=True`` (``self.act = nn.ReLU(inplace=True)`` ... ``self.act(x)``).

They write their input as ``x.relu_()`` does; the write rules (TL101-TL103) see them beside the function's
own mutations. Only PyTorch's callables count: ``df.drop(..., inplace=True)`` is pandas writing ``df``.
"""

from __future__ import annotations

import ast
import bisect
from dataclasses import dataclass

from .walks import lines_with, walk

# Text that can hold one: files and functions without it skip the search.
INPLACE_OPTION_TEXT = "inplace"


@dataclass(frozen=True)
class OptionWrite:
    """Shaped like analyzer.static.flow.Mutation (rules do not import the analyzer)."""

    kind: str  # "option"
    target: ast.AST  # the tensor written: the call's input
    node: ast.AST  # the call
    stmt: ast.stmt
    loop: ast.AST | None
    # how messages name the write: "`F.relu(..., inplace=True)`", "`self.act` (`nn.ReLU(inplace=True)`)"
    method: str = ""


def _inplace_true(call: ast.Call) -> bool:
    return any(k.arg == "inplace" and isinstance(k.value, ast.Constant) and k.value.value is True
               for k in call.keywords)


def _input_of(call: ast.Call):
    if call.args and not isinstance(call.args[0], ast.Starred):
        return call.args[0]
    return next((k.value for k in call.keywords if k.arg == "input"), None)


def _is_torch(ctx, func) -> bool:
    return (ctx.resolve(func) or "").startswith("torch.")


def _inplace_module_attributes(ctx, class_node) -> dict[str, str]:
    """``self.<attr> = nn.ReLU(inplace=True)`` anywhere in the class: attr -> the constructor's text."""
    cache = getattr(ctx, "_inplace_module_attributes", None)
    if cache is None:
        cache = ctx._inplace_module_attributes = {}
    found = cache.get(id(class_node))
    if found is None:
        found = cache[id(class_node)] = {}
        for node in walk(class_node):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and _inplace_true(node.value):
                if not _is_torch(ctx, node.value.func):
                    continue
                for t in node.targets:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                        found[t.attr] = ctx.segment(node.value)
    return found


def _class_of(ctx, func_node):
    classes = getattr(ctx, "_class_of_function", None)
    if classes is None:
        classes = ctx._class_of_function = {id(info.node): info.class_node for info in ctx.index.functions}
    return classes.get(id(func_node))


def _mentions_inplace(ctx, func) -> bool:
    """Is "inplace" on a line of the function, or of its class? Each option write needs the word there: in the
    call (``F.relu(x, inplace=True)``), in the local binding it calls, or in the class's ``self.act =
    nn.ReLU(inplace=True)``. (Most files that say "inplace" say it in a few functions only.)"""
    lines = ctx.__dict__.get("_inplace_lines", False)
    if lines is False:  # once per file: a search of the whole text for a word it lacks costs as much as a walk
        text = ctx.source.text
        lines = ctx.__dict__["_inplace_lines"] = lines_with(text, INPLACE_OPTION_TEXT) if INPLACE_OPTION_TEXT in text else []
    if lines is None or not hasattr(func, "end_lineno"):
        return True  # a text that may spell the keyword otherwise, or module-level code
    for node in (func, _class_of(ctx, func)):
        if node is not None:
            first = node.decorator_list[0].lineno if getattr(node, "decorator_list", None) else node.lineno
            i = bisect.bisect_left(lines, first)
            if i < len(lines) and lines[i] <= node.end_lineno:
                return True
    return False


def option_writes(ctx, facts) -> list[OptionWrite]:
    """The in-place writes of ``facts``' function spelled as an option, in source order."""
    func = facts.node
    cache = getattr(facts, "_option_writes", None)
    if cache is not None:
        return cache
    if not _mentions_inplace(ctx, func):
        facts._option_writes = []
        return []
    calls = []
    modules = None
    for call in facts.calls:
        if not call.args and not call.keywords:
            continue
        if _inplace_true(call):
            if _is_torch(ctx, call.func):
                calls.append((call, f"`{ctx.segment(call.func)}(..., inplace=True)`"))
            continue
        f = call.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
            if modules is None:
                cls = _class_of(ctx, func)
                modules = _inplace_module_attributes(ctx, cls) if cls is not None else {}
            if f.attr in modules:
                calls.append((call, f"`self.{f.attr}` (`{modules[f.attr]}`)"))
        elif isinstance(f, ast.Name) and facts.is_local(f.id):
            b = facts.binding_at(f.id, (call.lineno, call.col_offset))
            value = getattr(b, "value", None)
            if isinstance(value, ast.Call) and _inplace_true(value) and _is_torch(ctx, value.func):
                calls.append((call, f"`{f.id}` (`{ctx.segment(value)}`)"))
    out = []
    for call, how in calls:
        written = _input_of(call)
        if written is None:
            continue
        stmt, loop = _statement_and_loop(func, call)
        if stmt is not None:
            out.append(OptionWrite("option", written, call, stmt, loop, how))
    facts._option_writes = out
    return out


def all_writes(ctx, facts) -> list:
    """The function's mutations (analyzer.static.flow) and its option-spelled writes, in source order."""
    extra = option_writes(ctx, facts)
    if not extra:
        return facts.mutations
    return sorted([*facts.mutations, *extra], key=lambda m: (m.node.lineno, m.node.col_offset))


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _statement_and_loop(func, call):
    """The innermost statement of ``func``'s own scope holding ``call``, and the innermost loop around it."""
    pos = (call.lineno, call.col_offset)
    best, loop = None, None
    body = func.body if isinstance(func.body, list) else []
    stack = [(s, None) for s in body]
    while stack:
        stmt, around = stack.pop()
        if not (stmt.lineno, stmt.col_offset) <= pos <= (stmt.end_lineno, stmt.end_col_offset):
            continue
        if isinstance(stmt, _SCOPES):
            continue  # a nested function's call is its own
        best, loop = stmt, around
        inner = stmt if isinstance(stmt, _LOOPS) else around
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            for child in getattr(stmt, name, None) or ():
                if isinstance(child, ast.stmt):
                    stack.append((child, inner))
                elif hasattr(child, "body"):  # except handlers, match cases
                    stack.extend((c, inner) for c in child.body)
    return best, loop
