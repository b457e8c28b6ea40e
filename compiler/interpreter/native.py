"""Small native helpers that give the exact CPython behaviour and error messages for free:
argument binding, sequence unpacking, and the name CPython prints for a callable."""
from __future__ import annotations

import builtins
import functools
import types

from .decode import CO_VARARGS, CO_VARKEYWORDS


def _binder_template():
    return locals()


_TEMPLATE = _binder_template.__code__
_BUILTINS_GLOBALS = {"__builtins__": builtins}


@functools.lru_cache(maxsize=4096)
def _binder_code(code):
    n = (code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & CO_VARARGS)
         + bool(code.co_flags & CO_VARKEYWORDS))
    return _TEMPLATE.replace(
        co_argcount=code.co_argcount, co_posonlyargcount=code.co_posonlyargcount,
        co_kwonlyargcount=code.co_kwonlyargcount, co_varnames=code.co_varnames[:n], co_nlocals=n,
        co_flags=_TEMPLATE.co_flags | (code.co_flags & (CO_VARARGS | CO_VARKEYWORDS)),
        co_name=code.co_name, co_qualname=code.co_qualname)


def bind_arguments(fn: types.FunctionType, args, kwargs) -> dict:
    """Bind like CPython (same TypeErrors, word for word) by calling a body-less twin of `fn`."""
    binder = types.FunctionType(_binder_code(fn.__code__), _BUILTINS_GLOBALS, fn.__name__, fn.__defaults__)
    if fn.__kwdefaults__:
        binder.__kwdefaults__ = fn.__kwdefaults__
    return binder(*args, **kwargs)


@functools.lru_cache(maxsize=256)
def unpacker(before: int, after: int | None):
    """A native function doing `a, b = seq` (after is None) or `a, *rest, b = seq`, for exact errors."""
    names = [f"v{i}" for i in range(before)]
    if after is not None:
        names.append("*rest")
        names += [f"w{i}" for i in range(after)]
    targets = ", ".join(names) + ("," if len(names) == 1 else "")
    values = ", ".join(n.lstrip("*") for n in names) + ("," if len(names) == 1 else "")
    if not names:  # `() = seq`
        src = "def unpack(seq):\n    () = seq\n    return ()\n"
    else:
        src = f"def unpack(seq):\n    {targets} = seq\n    return ({values})\n"
    ns: dict = {}
    exec(compile(src, "<interpreter unpack>", "exec"), ns)
    return ns["unpack"]


def function_str(fn) -> str:
    """CPython's _PyObject_FunctionStr: how error messages name a callable."""
    try:
        qualname = fn.__qualname__
    except Exception:
        return str(fn)
    module = getattr(fn, "__module__", None)
    if module is not None and module != "builtins":
        return f"{module}.{qualname}()"
    return f"{qualname}()"
