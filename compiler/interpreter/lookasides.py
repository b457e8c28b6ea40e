"""The interpreter's own lookasides: builtins that depend on the calling frame (super(), locals(), globals(),
vars(), eval/exec/dir, sys._getframe, sys.exc_info()), that must keep provenance (getattr) or that call
back into Python (map, filter, sorted/min/max keys, functools.reduce, itertools): their callbacks are
interpreted too."""
from __future__ import annotations

import builtins
import functools
import itertools
import sys
import types

from . import events as ev
from . import provenance as pv
from .frame import NULL
from .interpreter import _internal_lookaside

_MISSING = object()


@_internal_lookaside(builtins.getattr)
def getattr_lookaside(interp, frame, args, kwargs, provs, kwprovs):
    if kwargs or not 2 <= len(args) <= 3:
        return builtins.getattr(*args, **kwargs), pv.Computed("getattr")
    obj, name = args[0], args[1]
    if not isinstance(name, str):
        return builtins.getattr(*args), pv.Computed("getattr")
    try:
        return interp.load_attr(frame, obj, name, provs[0])
    except AttributeError:
        if len(args) == 3:
            return args[2], provs[2]
        raise


@_internal_lookaside(builtins.super)
def super_lookaside(interp, frame, args, kwargs, provs, kwprovs):
    if args or kwargs:
        return super(*args, **kwargs), pv.Computed("super")
    # Zero-argument super(): the __class__ cell and the first argument of the *interpreted* frame.
    code = frame.code
    if code.co_argcount == 0:
        raise RuntimeError("super(): no arguments")
    if "__class__" not in code.co_freevars:
        raise RuntimeError("super(): __class__ cell not found")
    cell = frame.fast[frame.info.names.index("__class__")]
    try:
        cls = cell.cell_contents
    except ValueError:
        raise RuntimeError("super(): empty __class__ cell") from None
    first = frame.fast[0]
    if type(first).__name__ == "cell" and 0 in _cell_slots(frame):
        first = first.cell_contents
    if first is NULL:
        raise RuntimeError("super(): arg[0] deleted")
    return super(cls, first), pv.Computed("super", (frame.pfast[0],))


def _cell_slots(frame):
    return {frame.info.names.index(c) for c in frame.code.co_cellvars}


def _frame_locals(frame) -> dict:
    """locals() of an interpreted frame: 3.13 gives a fresh snapshot; 3.11/3.12 one dict per frame, refreshed
    from the fast locals (extra keys, e.g. written by exec, stay)."""
    if sys.version_info < (3, 13):
        out = frame.locals_dict if frame.locals_dict is not None else {}
        frame.locals_dict = out
        for name in frame.info.names:
            out.pop(name, None)
    else:
        out = {}
    cells = _cell_slots(frame)
    for i, name in enumerate(frame.info.names):
        value = frame.fast[i]
        if i in cells or i >= frame.info.first_free:
            try:
                value = value.cell_contents
            except (ValueError, AttributeError):
                continue
        if value is not NULL:
            out[name] = value
    return out


def _side_effect(interp, frame, name, value):
    prov = pv.OpaqueResult(name)
    interp.emit(ev.SIDE_EFFECT_CALL, name, frame, value, prov)
    return value, prov


@_internal_lookaside(builtins.locals)
def locals_lookaside(interp, frame, args, kwargs, provs, kwprovs):
    if args or kwargs:
        return builtins.locals(*args, **kwargs), None
    return _side_effect(interp, frame, "locals", _frame_locals(frame))


@_internal_lookaside(builtins.globals)
def globals_lookaside(interp, frame, args, kwargs, provs, kwprovs):
    if args or kwargs:
        return builtins.globals(*args, **kwargs), None
    return _side_effect(interp, frame, "globals", frame.globals)


@_internal_lookaside(builtins.vars)
def vars_lookaside(interp, frame, args, kwargs, provs, kwprovs):
    value = _frame_locals(frame) if not args and not kwargs else builtins.vars(*args, **kwargs)
    return _side_effect(interp, frame, "vars", value)


@_internal_lookaside(sys.exc_info)
def exc_info_lookaside(interp, frame, args, kwargs, provs, kwprovs):
    exc = interp.current_exc
    return ((None, None, None) if exc is None else (type(exc), exc, exc.__traceback__)), pv.Computed("exc_info")


if hasattr(sys, "exception"):
    @_internal_lookaside(sys.exception)
    def exception_lookaside(interp, frame, args, kwargs, provs, kwprovs):
        return interp.current_exc, pv.Computed("sys.exception")


@_internal_lookaside(builtins.len)
def len_lookaside(interp, frame, args, kwargs, provs, kwprovs):
    import operator

    from .dunders import python_method
    method = python_method(type(args[0]), "__len__") if len(args) == 1 and not kwargs else None
    if method is None:
        return builtins.len(*args, **kwargs), pv.Computed("len", tuple(provs))
    result = operator.index(interp.call_function(method, (args[0],), {}, provs)[0])
    if result < 0:
        raise ValueError("__len__() should return >= 0")
    return result, pv.Computed("len", tuple(provs))


class FrameView:
    """What sys._getframe() returns for an interpreted frame: a read-only view with the attributes
    library code reads (f_globals, f_locals, f_code, f_lineno, f_back, f_builtins)."""

    __slots__ = ("_interp", "_index")

    def __init__(self, interp, index):
        self._interp = interp
        self._index = index

    @property
    def _frame(self):
        return self._interp.active[self._index]

    @property
    def f_globals(self):
        return self._frame.globals

    @property
    def f_builtins(self):
        return self._frame.builtins

    @property
    def f_locals(self):
        return _frame_locals(self._frame)

    @property
    def f_code(self):
        return self._frame.code

    @property
    def f_lineno(self):
        return self._frame.location().lineno

    @property
    def f_lasti(self):
        return self._frame.instr.offset if self._frame.instr is not None else -1

    @property
    def f_back(self):
        if self._index > 0:
            return FrameView(self._interp, self._index - 1)
        return self._interp.native_caller

    def __repr__(self):
        loc = self._frame.location()
        return f"<interpreted frame {loc.function} at {loc}>"


def _frame_at(interp, depth):
    active = interp.active
    if depth < len(active):
        return FrameView(interp, len(active) - 1 - depth)
    native = interp.native_caller
    for _ in range(depth - len(active)):
        native = native.f_back if native is not None else None
    if native is None:
        raise ValueError("call stack is not deep enough")
    return native


@_internal_lookaside(sys._getframe)
def getframe_lookaside(interp, frame, args, kwargs, provs, kwprovs):
    depth = args[0] if args else kwargs.get("depth", 0)
    return _frame_at(interp, depth), pv.Computed("frame")


if hasattr(sys, "_getframemodulename"):
    @_internal_lookaside(sys._getframemodulename)
    def getframemodulename_lookaside(interp, frame, args, kwargs, provs, kwprovs):
        depth = args[0] if args else kwargs.get("depth", 0)
        try:
            target = _frame_at(interp, depth)
        except ValueError:
            return None, pv.Computed("frame module")
        if isinstance(target, FrameView):
            return target._frame.fn.__module__, pv.Computed("frame module")
        return target.f_globals.get("__name__"), pv.Computed("frame module")


def _caller_namespaces(frame, args, kwargs, name):
    """eval/exec without explicit globals use the *calling* frame's: give them the interpreted frame's."""
    args = list(args)
    if len(args) < 2 and "globals" not in kwargs:
        args.append(frame.globals)
        if len(args) < 3 and "locals" not in kwargs:
            args.append(_frame_locals(frame))
    return args


@_internal_lookaside(builtins.eval)
def eval_lookaside(interp, frame, args, kwargs, provs, kwprovs):
    return _side_effect(interp, frame, "eval", builtins.eval(*_caller_namespaces(frame, args, kwargs, "eval"),
                                                             **kwargs))


@_internal_lookaside(builtins.exec)
def exec_lookaside(interp, frame, args, kwargs, provs, kwprovs):
    return _side_effect(interp, frame, "exec", builtins.exec(*_caller_namespaces(frame, args, kwargs, "exec"),
                                                             **kwargs))


@_internal_lookaside(builtins.dir)
def dir_lookaside(interp, frame, args, kwargs, provs, kwprovs):
    if args or kwargs:
        return builtins.dir(*args, **kwargs), pv.Computed("dir", tuple(provs))
    return sorted(_frame_locals(frame)), pv.Computed("dir")


# ----- builtins that call back into Python: the callbacks are interpreted too -----


def _reentrant(interp, frame, fn):
    """Wrap a Python callable handed to a native builtin so that its calls come back to the interpreter.
    Only for builtins that neither store nor expose the callable's identity in a way user code observes."""
    target = fn.__func__ if type(fn) is types.MethodType else fn
    if type(target) is not types.FunctionType:
        return fn

    def callback(*args, **kwargs):
        value, _ = interp.call(frame, fn, args, kwargs, [pv.UNKNOWN] * len(args),
                               {k: pv.UNKNOWN for k in kwargs})
        return value
    return callback


def _interpreted_iterable(interp, frame, obj):
    """`obj` itself, or for an instance of a class with __iter__ written in Python an iterator whose
    __iter__/__next__ run under the interpreter (what a native consumer such as list() would call)."""
    from .dunders import python_method
    from .interpreter import outside_generator
    if outside_generator(obj):  # each step runs its native frame, as an effect (advance_outside_generator)
        return _outside_steps(interp, frame, obj)
    method = python_method(type(obj), "__iter__")
    if method is None:
        return obj
    iterator, _ = interp.call_function(method, (obj,), {}, ())
    if not hasattr(type(iterator), "__next__"):
        raise TypeError(f"iter() returned non-iterator of type '{type(iterator).__name__}'")
    step = python_method(type(iterator), "__next__")
    if step is None:
        return iterator  # e.g. a generator: already driven by the interpreter

    def interpreted_iterator():
        while True:
            try:
                value, _ = interp.call_function(step, (iterator,), {}, ())
            except StopIteration:
                return
            yield value
    return interpreted_iterator()


def _outside_steps(interp, frame, generator):
    while True:
        try:
            value, _ = interp.advance_outside_generator(frame, next, (generator,), {})
        except StopIteration:
            return
        yield value


def _callback_lookaside(target, positions=(), keywords=(), iterables=()):
    """Register `target` so that its callable arguments at `positions` / `keywords` are interpreted, and
    so are the Python-level __iter__/__next__ of its iterable arguments at `iterables` ("*": all)."""
    @_internal_lookaside(target)
    def lookaside(interp, frame, args, kwargs, provs, kwprovs):
        args = list(args)
        for i in (range(len(args)) if iterables == "*" else iterables):
            if i < len(args):
                args[i] = _interpreted_iterable(interp, frame, args[i])
        for i in positions:
            if i < len(args):
                args[i] = _reentrant(interp, frame, args[i])
        for k in keywords:
            if k in kwargs:
                kwargs = {**kwargs, k: _reentrant(interp, frame, kwargs[k])}
        return target(*args, **kwargs), pv.Computed(f"call {target.__name__}", tuple(provs))
    return lookaside


_callback_lookaside(builtins.map, positions=(0,), iterables=range(1, 64))
_callback_lookaside(builtins.filter, positions=(0,), iterables=(1,))
_callback_lookaside(builtins.sorted, keywords=("key",), iterables=(0,))
_callback_lookaside(functools.reduce, positions=(0,), iterables=(1,))
_callback_lookaside(itertools.starmap, positions=(0,), iterables=(1,))
_callback_lookaside(itertools.filterfalse, positions=(0,), iterables=(1,))
_callback_lookaside(itertools.takewhile, positions=(0,), iterables=(1,))
_callback_lookaside(itertools.dropwhile, positions=(0,), iterables=(1,))
_callback_lookaside(itertools.groupby, positions=(1,), keywords=("key",), iterables=(0,))
_callback_lookaside(itertools.accumulate, positions=(1,), keywords=("func",), iterables=(0,))
for _consumer in (list, tuple, set, frozenset, sum, any, all, enumerate, itertools.chain, itertools.islice):
    _callback_lookaside(_consumer, iterables=(0,))
_callback_lookaside(zip, iterables="*")


def _min_max(target):
    # min(iterable, *, key, default) or min(a, b, ...): only the one-iterable form iterates its argument
    @_internal_lookaside(target)
    def lookaside(interp, frame, args, kwargs, provs, kwprovs):
        args = list(args)
        if len(args) == 1:
            args[0] = _interpreted_iterable(interp, frame, args[0])
        if "key" in kwargs:
            kwargs = {**kwargs, "key": _reentrant(interp, frame, kwargs["key"])}
        return target(*args, **kwargs), pv.Computed(f"call {target.__name__}", tuple(provs))
    return lookaside


_min_max(builtins.min)
_min_max(builtins.max)
