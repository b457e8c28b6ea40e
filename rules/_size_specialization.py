"""torch.compile specializes tensor sizes 0 and 1: a dynamic compile takes every symbolic size to be at least 2, so a
test that only asks whether a size is 0 or 1 (``if x.numel() == 0``, ``x.shape[0] > 0``, ``if width - 1 == 0``) is
decided at compile time with no guard, and the inputs it is about get their own graph anyway (round 4, class [17];
tests/rules/test_rule_tl301_torch_compile.py counts the compiles). A test against another value (``== 4``) does guard,
and so does one on an int argument, which is not specialized that way."""

from __future__ import annotations

import ast
import operator

_OPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
        ast.GtE: operator.ge}
_SIZE_METHODS = frozenset({"size", "numel", "nelement"})
_MAX_DEPTH = 6


def decided_for_sizes_from_two(values, facts, test) -> bool:
    """Is every symbolic part of ``test`` a comparison of one tensor size (plus or minus a constant) with an int
    constant whose outcome is the same for every size from 2 up? Parts that are no symbolic value (`x is not None`)
    do not count."""
    parts = test.values if isinstance(test, ast.BoolOp) else [test]
    symbolic = [p for p in parts if values.is_symbolic(p)]
    return bool(symbolic) and all(_decided(values, facts, p) for p in symbolic)


def _decided(values, facts, e) -> bool:
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
        return _decided(values, facts, e.operand)
    if not (isinstance(e, ast.Compare) and len(e.ops) == 1 and type(e.ops[0]) in _OPS):
        return False
    left, right, op = e.left, e.comparators[0], _OPS[type(e.ops[0])]
    k = _int(right)
    if k is None:
        k, left = _int(left), right
        op = {operator.lt: operator.gt, operator.gt: operator.lt, operator.le: operator.ge,
              operator.ge: operator.le}.get(op, op)
    if k is None:
        return False
    c = _size_offset(values, facts, left, (e.lineno, e.col_offset), 0)
    if c is None:
        return False
    points = {2, 3, 4, k - c - 1, k - c, k - c + 1, 10 ** 9}
    return len({op(s + c, k) for s in points if s >= 2}) == 1


def _int(e):
    if isinstance(e, ast.Constant) and type(e.value) is int:
        return e.value
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub) and isinstance(e.operand, ast.Constant) \
            and type(e.operand.value) is int:
        return -e.operand.value
    return None


def _size_offset(values, facts, e, pos, depth):
    """``c`` when ``e`` is one tensor size plus ``c`` (`x.shape[0]`, `t.numel() - 1`, a name bound to one, or unpacked
    from a shape); None otherwise."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub)):
        k = _int(e.right)
        if k is not None:
            inner = _size_offset(values, facts, e.left, pos, depth + 1)
            return None if inner is None else inner + (k if isinstance(e.op, ast.Add) else -k)
        k = _int(e.left)
        if k is not None and isinstance(e.op, ast.Add):
            inner = _size_offset(values, facts, e.right, pos, depth + 1)
            return None if inner is None else inner + k
        return None
    if isinstance(e, ast.Subscript) and isinstance(e.slice, (ast.Constant, ast.UnaryOp)) and _is_shape(values, e.value):
        return 0
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in _SIZE_METHODS \
            and len(e.args) <= 1 and values.is_symbolic(e):
        return 0 if e.func.attr != "size" or e.args else None
    if isinstance(e, ast.Name):
        b = facts.binding_at(e.id, pos)
        if b is None or isinstance(b, str) or b.kind != "assign":
            return None
        stmt = b.stmt
        if b.value is None and isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Tuple) and _is_shape(values, stmt.value) \
                and all(isinstance(t, ast.Name) for t in stmt.targets[0].elts):
            return 0  # `batch, width = x.shape`: each name is one size
        if b.value is None:
            return None
        return _size_offset(values, facts, b.value, (stmt.lineno, stmt.col_offset), depth + 1)
    return None


def _is_shape(values, e) -> bool:
    if isinstance(e, ast.Attribute) and e.attr == "shape":
        return values.is_symbolic(e)
    return isinstance(e, ast.Call) and not e.args and isinstance(e.func, ast.Attribute) and e.func.attr == "size" \
        and values.is_symbolic(e)
