"""Handlers for calls, function creation, classes, super() and imports."""
from __future__ import annotations

import builtins
import types

from . import provenance as pv
from .decode import VERSION
from .frame import NULL
from .native import function_str
from .opcodes_data import push_plain_callable
from .registry import handles

_V313 = VERSION >= (3, 13)


def _decode_call(frame, argc, kw_names):
    """Pop a call's operands: (callable, args, kwargs, provs, kwprovs). Separate from the call itself so
    that interpreted recursion costs as few native frames as possible."""
    args, provs = frame.popn(argc)
    (first, second), (pfirst, psecond) = frame.popn(2)
    if _V313:
        fn, pfn = first, pfirst
        if second is not NULL:
            args.insert(0, second)
            provs.insert(0, psecond)
    elif first is NULL:
        fn, pfn = second, psecond
    else:
        fn, pfn = first, pfirst
        args.insert(0, second)
        provs.insert(0, psecond)
    kwargs, kwprovs = {}, {}
    if kw_names:
        n = len(kw_names)
        for name, value, prov in zip(kw_names, args[-n:], provs[-n:]):
            kwargs[name] = value
            kwprovs[name] = prov
        del args[-n:], provs[-n:]
    return fn, args, kwargs, provs, kwprovs


@handles("KW_NAMES", until=(3, 12))
def kw_names(interp, frame, instr):
    frame.kw_names = frame.code.co_consts[instr.arg]


@handles("CALL")
def call(interp, frame, instr):
    names, frame.kw_names = frame.kw_names, ()
    frame.push(*interp.call(frame, *_decode_call(frame, instr.arg, names)))


@handles("CALL_KW", since=(3, 13))
def call_kw(interp, frame, instr):
    names = frame.pop()
    frame.push(*interp.call(frame, *_decode_call(frame, instr.arg, names)))


@handles("CALL_FUNCTION_EX")
def call_function_ex(interp, frame, instr):
    kwargs, pkw = frame.popp() if instr.arg & 1 else ({}, None)
    args, pargs = frame.popp()
    (first, second), (pfirst, psecond) = frame.popn(2)
    fn, pfn = (first, pfirst) if _V313 else (second, psecond)
    if type(args) is not tuple:
        if not (hasattr(type(args), "__iter__") or hasattr(type(args), "__getitem__")):
            raise TypeError(f"{function_str(fn)} argument after * must be an iterable, not {type(args).__name__}")
        args = tuple(args)
    if type(kwargs) is not dict:
        if not hasattr(type(kwargs), "keys"):
            raise TypeError(f"{function_str(fn)} argument after ** must be a mapping, not {type(kwargs).__name__}")
        kwargs = {k: kwargs[k] for k in kwargs.keys()}
    provs = [pv.Item(pargs, i) for i in range(len(args))]
    kwprovs = {k: pv.Item(pkw, k) for k in kwargs} if pkw is not None else {}
    frame.push(*interp.call(frame, fn, args, kwargs, provs, kwprovs))


# ----- functions -----
def _with_closure(fn, closure):
    new = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, closure)
    new.__qualname__ = fn.__qualname__
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__annotations__ = fn.__annotations__
    return new


def _set_function_attribute(fn, flag, value):
    if flag == 0x08:
        return _with_closure(fn, value)
    if flag == 0x01:
        fn.__defaults__ = value
    elif flag == 0x02:
        fn.__kwdefaults__ = value
    elif flag == 0x04:
        fn.__annotations__ = dict(zip(value[::2], value[1::2])) if isinstance(value, tuple) else value
    return fn


def _new_function(frame, code, closure=None):
    if closure is None and code.co_freevars:  # 3.13 sets the real closure with SET_FUNCTION_ATTRIBUTE
        closure = tuple(types.CellType() for _ in code.co_freevars)
    fn = types.FunctionType(code, frame.globals, code.co_name, None, closure)
    fn.__qualname__ = code.co_qualname
    return fn


@handles("MAKE_FUNCTION", until=(3, 12))
def make_function(interp, frame, instr):
    code = frame.pop()
    attributes = {flag: frame.pop() for flag in (0x08, 0x04, 0x02, 0x01) if instr.arg & flag}  # pushed in reverse
    fn = _new_function(frame, code, attributes.pop(0x08, None))
    for flag, value in attributes.items():
        fn = _set_function_attribute(fn, flag, value)
    frame.push(fn, pv.Computed(f"function {code.co_qualname}"))


@handles("MAKE_FUNCTION", since=(3, 13))
def make_function_313(interp, frame, instr):
    code = frame.pop()
    frame.push(_new_function(frame, code), pv.Computed(f"function {code.co_qualname}"))


@handles("SET_FUNCTION_ATTRIBUTE", since=(3, 13))
def set_function_attribute(interp, frame, instr):
    fn, prov = frame.popp()
    value = frame.pop()
    frame.push(_set_function_attribute(fn, instr.arg, value), prov)


@handles("LOAD_BUILD_CLASS")
def load_build_class(interp, frame, instr):
    if "__build_class__" not in frame.builtins:
        raise NameError("__build_class__ not found")
    frame.push(frame.builtins["__build_class__"], pv.Builtin("__build_class__"))


@handles("LOAD_SUPER_ATTR", since=(3, 12))
def load_super_attr(interp, frame, instr):
    self_obj, pself = frame.popp()
    cls = frame.pop()
    global_super = frame.pop()
    if global_super is builtins.super:
        proxy = super(cls, self_obj)
    else:
        proxy = interp.call(frame, global_super, (cls, self_obj) if instr.arg & 2 else (), {}, (None, None), {})[0]
    value, prov = interp.load_attr(frame, proxy, instr.argval, pv.Computed("super", (pself,)))
    if instr.arg & 1:
        if type(value) is types.MethodType and value.__self__ is self_obj and \
                type(value.__func__) is types.FunctionType:
            frame.push(value.__func__, prov)
            frame.push(self_obj, pself)
        else:
            push_plain_callable(frame, value, prov)
    else:
        frame.push(value, prov)


# ----- intrinsics (3.12+) -----
def _stopiteration_error(interp, exc):
    if isinstance(exc, StopIteration):
        err = RuntimeError("generator raised StopIteration")
        err.__cause__ = exc
        err.__context__ = exc
        return err
    return exc


@handles("CALL_INTRINSIC_2", since=(3, 12))
def call_intrinsic_2(interp, frame, instr):
    from .opcodes_control import prep_reraise_star

    value1 = frame.pop()
    value2 = frame.pop()
    which = instr.argval if isinstance(instr.argval, str) else instr.argrepr
    if which != "INTRINSIC_PREP_RERAISE_STAR":
        raise _unsupported(frame, f"CALL_INTRINSIC_2 {which}")  # (type parameters: class and def headers only)
    frame.push(prep_reraise_star(value2, value1, interp.eg_raised_by_name), None)


@handles("CALL_INTRINSIC_1", since=(3, 12))
def call_intrinsic_1(interp, frame, instr):
    value, prov = frame.popp()
    which = instr.argval if isinstance(instr.argval, str) else instr.argrepr
    if which == "INTRINSIC_STOPITERATION_ERROR":
        frame.push(_stopiteration_error(interp, value), prov)
    elif which == "INTRINSIC_UNARY_POSITIVE":
        frame.push(+value, pv.Computed("+", (prov,)))
    elif which == "INTRINSIC_LIST_TO_TUPLE":
        frame.push(tuple(value), prov)
    elif which == "INTRINSIC_IMPORT_STAR":
        raise _unsupported(frame, "`from module import *` inside a function")
    else:
        raise _unsupported(frame, f"CALL_INTRINSIC_1 {which}")


def _unsupported(frame, what):
    from .errors import InterpreterError
    loc = frame.location()
    return InterpreterError(f"unsupported construct: {what}", filename=loc.filename, lineno=loc.lineno,
                            construct=what)


# ----- imports -----
@handles("IMPORT_NAME")
def import_name(interp, frame, instr):
    fromlist = frame.pop()
    level = frame.pop()
    importer = frame.builtins.get("__import__", builtins.__import__)
    module = importer(instr.argval, frame.globals, None, fromlist, level)
    frame.push(module, pv.Computed(f"import {instr.argval}"))


@handles("IMPORT_FROM")
def import_from(interp, frame, instr):
    import sys
    module, prov = frame.stack[-1], frame.pstack[-1]
    name = instr.argval
    absent = object()
    value = getattr(module, name, absent)
    if value is absent:
        full = f"{getattr(module, '__name__', '?')}.{name}"
        value = sys.modules.get(full, absent)
    if value is absent:
        raise ImportError(f"cannot import name '{name}' from '{getattr(module, '__name__', '?')}' "
                          f"({getattr(module, '__file__', 'unknown location')})",
                          name=getattr(module, '__name__', None), path=getattr(module, '__file__', None))
    frame.push(value, pv.Attribute(prov, name))
