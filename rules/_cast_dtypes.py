"""Known dtypes of casts. ``x.to(dtype)`` (and ``float()``, ``double()``...) returns ``x`` itself only when nothing
needs converting; a cast whose input is known to hold another dtype always copies (TL101: the write cannot reach
the input). Known here: the dtype a cast produces, kept through indexing and through arithmetic with Python numbers
or ``torch.iinfo(...)``/``torch.finfo(...)`` limits (round 4, class [20]: sglang's
``uniforms = hashed.to(torch.float64) / torch.iinfo(torch.uint32).max`` then ``uniforms[:, :k].to(torch.float32)``)."""

from __future__ import annotations

import ast

from ._torch_api import assigned_value

_METHOD_DTYPES = {"float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16",
                  "long": "int64", "int": "int32", "short": "int16", "bool": "bool", "byte": "uint8", "char": "int8"}
_DTYPE_NAMES = {"float": "float32", "double": "float64", "half": "float16", "long": "int64", "int": "int32",
                "short": "int16", "cfloat": "complex64", "cdouble": "complex128"}
_MAX_DEPTH = 6


def cast_dtype(ctx, call) -> str | None:
    """The dtype the cast ``call`` converts to, when it names one."""
    f = call.func
    if not isinstance(f, ast.Attribute):
        return None
    if f.attr in _METHOD_DTYPES and not call.args and not call.keywords:
        return _METHOD_DTYPES[f.attr]
    if f.attr == "to":
        args = [k.value for k in call.keywords if k.arg == "dtype"] or [a for a in call.args if _dtype(ctx, a)]
        return _dtype(ctx, args[0]) if len(args) == 1 else None
    return None


def known_dtype(ctx, facts, e, pos, depth: int = 0) -> str | None:
    """The dtype ``e`` holds at ``pos``, when a cast makes it known; None otherwise."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(e, ast.Subscript):
        return known_dtype(ctx, facts, e.value, pos, depth + 1)
    if isinstance(e, ast.Call):
        return cast_dtype(ctx, e)
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
        for tensor, other in ((e.left, e.right), (e.right, e.left)):
            if _python_number(ctx, other):
                got = known_dtype(ctx, facts, tensor, pos, depth + 1)
                return got if got in ("float32", "float64", "float16", "bfloat16") else None
        return None
    if isinstance(e, ast.Name):
        got = assigned_value(facts, e.id, pos)
        return known_dtype(ctx, facts, *got, depth + 1) if got else None
    return None


def _dtype(ctx, e) -> str | None:
    name = ctx.resolve(e) or ""
    if not name.startswith("torch."):
        return None
    last = name[len("torch."):]
    return _DTYPE_NAMES.get(last, last) if last.isidentifier() and last[:1].islower() and (
        last in _DTYPE_NAMES or any(last.startswith(p) for p in ("float", "int", "uint", "bfloat", "complex", "bool"))
    ) else None


def _python_number(ctx, e) -> bool:
    """A number constant, or a limit of ``torch.iinfo(...)``/``torch.finfo(...)``: a Python scalar, no tensor."""
    if isinstance(e, ast.Constant):
        return isinstance(e.value, (int, float)) and not isinstance(e.value, bool)
    if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Call):
        return (ctx.resolve(e.value.func) or "") in ("torch.iinfo", "torch.finfo")
    return False
