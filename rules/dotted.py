"""``a.b.c`` read off an expression, shared by the rules and the analyzer's module index (which imports it from
here: the rules sit below the analyzer)."""

from __future__ import annotations

import ast

_Name, _Attribute = ast.Name, ast.Attribute


def dotted_parts(expr) -> tuple[str, ...] | None:
    """``a.b.c`` as ("a", "b", "c"); None for anything but a name followed by attributes."""
    if type(expr) is _Name:  # (most asked: a bare name, then `a.b`; asked ~10^5 times per thousand files)
        return (expr.id,)
    parts = []
    while isinstance(expr, _Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, _Name):
        return None
    parts.append(expr.id)
    return tuple(reversed(parts))


def dotted_name(expr) -> str | None:
    """``a.b.c`` as "a.b.c"; None for anything but a name followed by attributes."""
    t = type(expr)
    if t is _Name:
        return expr.id
    if t is _Attribute:
        if type(expr.value) is _Name:
            return expr.value.id + "." + expr.attr
    elif not isinstance(expr, (_Name, _Attribute)):
        return None  # a call, a subscript, a constant...
    parts = dotted_parts(expr)
    return ".".join(parts) if parts is not None else None


def chain_root(expr):
    """The expression under a run of attributes: ``x`` for ``x.a.b``, the call for ``f().a``."""
    while isinstance(expr, ast.Attribute):
        expr = expr.value
    return expr
