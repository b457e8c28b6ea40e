"""Operators on instances of Python classes: the special methods written in Python are interpreted.

CPython's dispatch rules are followed (reflected operand first when its type is a subclass that
overrides the reflected method; NotImplemented falls through; the same TypeError messages). Operands of
static (builtin) types never come here: the native operator is exact and fast."""
from __future__ import annotations

import types

from . import provenance as pv

_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: classes created by `class` statements (or type(...))
_MISSING = object()

# BINARY_OP arg -> (method, reflected method, symbol); 13.. are the in-place forms of 0..12
BINARY = [("__add__", "__radd__", "+"), ("__and__", "__rand__", "&"), ("__floordiv__", "__rfloordiv__", "//"),
          ("__lshift__", "__rlshift__", "<<"), ("__matmul__", "__rmatmul__", "@"), ("__mul__", "__rmul__", "*"),
          ("__mod__", "__rmod__", "%"), ("__or__", "__ror__", "|"), ("__pow__", "__rpow__", "** or pow()"),
          ("__rshift__", "__rrshift__", ">>"), ("__sub__", "__rsub__", "-"), ("__truediv__", "__rtruediv__", "/"),
          ("__xor__", "__rxor__", "^")]
_INPLACE_SYMBOL = {"** or pow()": "**="}

COMPARE = {"<": ("__lt__", "__gt__"), "<=": ("__le__", "__ge__"), "==": ("__eq__", "__eq__"),
           "!=": ("__ne__", "__ne__"), ">": ("__gt__", "__lt__"), ">=": ("__ge__", "__le__")}


def lookup(kind, name):
    for klass in kind.__mro__:
        d = klass.__dict__
        if name in d:
            return d[name]
    return _MISSING


def is_python_class(kind) -> bool:
    return bool(kind.__flags__ & _HEAPTYPE)


def python_method(kind, name):
    """The special method `name` of `kind` if it is written in Python (a plain function), else None."""
    if not kind.__flags__ & _HEAPTYPE:
        return None
    attr = lookup(kind, name)
    return attr if type(attr) is types.FunctionType else None


def _call_special(interp, frame, attr, obj, args, provs):
    """Call a special method found on type(obj), binding it like CPython's slot lookup does."""
    if type(attr) is types.FunctionType:
        return interp.call_function(attr, (obj, *args), {}, provs)
    get = getattr(type(attr), "__get__", None)
    bound = attr if get is None else get(attr, obj, type(obj))
    return interp.call(frame, bound, tuple(args), {}, provs[1:], {})


# Builtin sequences implement + and * as sequence concat/repeat, which CPython tries after the number
# protocol with its own errors; operators involving them stay native (Python methods then run natively).
_SEQUENCES = (str, bytes, bytearray, list, tuple)


def wants_binary(a, b, index) -> bool:
    ta, tb = type(a), type(b)
    if not (ta.__flags__ | tb.__flags__) & _HEAPTYPE:
        return False
    if issubclass(ta, _SEQUENCES) or issubclass(tb, _SEQUENCES):
        return False
    op, rop, _ = BINARY[index % 13]
    names = (op, rop, "__i" + op[2:]) if index >= 13 else (op, rop)
    return any(python_method(t, n) is not None for t in (ta, tb) for n in names)


def binary(interp, frame, a, b, pa, pb, index):
    op, rop, symbol = BINARY[index % 13]
    if index >= 13:
        iop = lookup(type(a), "__i" + op[2:])
        if iop is not _MISSING and iop is not None:
            result, prov = _call_special(interp, frame, iop, a, (b,), (pa, pb))
            if result is not NotImplemented:
                return result, pv.Computed(symbol + "=", (pa, pb))
        symbol = _INPLACE_SYMBOL.get(symbol, symbol + "=")
    ta, tb = type(a), type(b)
    left = lookup(ta, op)
    right = lookup(tb, rop) if tb is not ta else _MISSING
    if right is not _MISSING and right is not None and issubclass(tb, ta) and right is not lookup(ta, rop):
        result, _ = _call_special(interp, frame, right, b, (a,), (pb, pa))
        if result is not NotImplemented:
            return result, pv.Computed(symbol, (pa, pb))
        right = _MISSING
    if left is not _MISSING and left is not None:
        result, _ = _call_special(interp, frame, left, a, (b,), (pa, pb))
        if result is not NotImplemented:
            return result, pv.Computed(symbol, (pa, pb))
    if right is not _MISSING and right is not None:
        result, _ = _call_special(interp, frame, right, b, (a,), (pb, pa))
        if result is not NotImplemented:
            return result, pv.Computed(symbol, (pa, pb))
    raise TypeError(f"unsupported operand type(s) for {symbol}: '{ta.__name__}' and '{tb.__name__}'")


def wants_compare(a, b, symbol) -> bool:
    ta, tb = type(a), type(b)
    if not (ta.__flags__ | tb.__flags__) & _HEAPTYPE:
        return False
    name, swapped = COMPARE[symbol]
    return any(python_method(t, n) is not None for t in (ta, tb) for n in (name, swapped))


def compare(interp, frame, a, b, pa, pb, symbol):
    name, swapped = COMPARE[symbol]
    ta, tb = type(a), type(b)
    checked_reverse = False
    if ta is not tb and issubclass(tb, ta):
        checked_reverse = True
        result, _ = _call_special(interp, frame, lookup(tb, swapped), b, (a,), (pb, pa))
        if result is not NotImplemented:
            return result, pv.Computed(symbol, (pa, pb))
    result, _ = _call_special(interp, frame, lookup(ta, name), a, (b,), (pa, pb))
    if result is not NotImplemented:
        return result, pv.Computed(symbol, (pa, pb))
    if not checked_reverse:
        result, _ = _call_special(interp, frame, lookup(tb, swapped), b, (a,), (pb, pa))
        if result is not NotImplemented:
            return result, pv.Computed(symbol, (pa, pb))
    if symbol == "==":
        return a is b, pv.Computed(symbol, (pa, pb))
    if symbol == "!=":
        return a is not b, pv.Computed(symbol, (pa, pb))
    raise TypeError(f"'{symbol}' not supported between instances of '{ta.__name__}' and '{tb.__name__}'")
