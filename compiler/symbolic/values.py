"""Symbolic values (`jit(fn, cache="symbolic values")`): int and float arguments stay symbolic in the trace.

An argument `n` becomes a `SymInt` (an IntegerProxy: an int subclass carrying its name and this call's value).
Arithmetic on symbolic values is recorded as scalar ops of the computation trace (`i3 = n + 1`), so the
execution trace takes `n` as an input and computes from the value of each call. Every decision Python
makes on a symbolic value becomes a constraint that the prologue checks (`if not (n > 5): return None`):

- truthiness of a comparison or of a value (`if`, `while`, `and`/`or`/`not`, `min`/`max` selecting a side);
- a value Python needs as a plain number: `range(n)`, `[a] * n`, `lst[n]`, `d[n]` (hash), `str(n)`/f-strings,
  any native call that is not a torch op, and torch ops whose output metadata would depend on it
  (shapes, dims). These *specialize*: the constraint is `n == <value>`.

Int subclasses pass torch's argument parser untouched, but native code reads their value without calling
any method; the bytecode interpreter therefore hands symbolic values to native code only through
`Interpreter.native_args` (set while tracing symbolically), which specializes them. So symbolic values need
the interpreting front end; anything this module cannot keep sound falls back to constant values
(`Fallback`: the call is traced again with constant values).
"""
from __future__ import annotations

import builtins
import linecache
import math
import operator
import os
import threading
import types
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from ..core import events as ev
from ..core.context import current_state
from ..core.errors import Fallback
from ..core.proxies import FloatProxy, IntegerProxy, Symbolic
from ..core.source import INTERPRETERS, user_location
from ..core.symbols import BoundSymbol, Symbol, Tag
from .builtin_answers import _real_isinstance, tracing_isinstance

__all__ = ["Fallback"]  # (re-exported: raised where symbolic tracing cannot stay sound)

_LOCAL = threading.local()


@contextmanager
def requested(on: bool):
    """While a jitted function with cache="symbolic values" traces (read by the front end)."""
    before, notes_before = getattr(_LOCAL, "on", False), getattr(_LOCAL, "single_use", None)
    _LOCAL.on, _LOCAL.single_use = on, []
    try:
        yield _LOCAL.single_use  # why the trace made must serve this call only (see specialize)
    finally:
        _LOCAL.on, _LOCAL.single_use = before, notes_before


def is_requested() -> bool:
    return getattr(_LOCAL, "on", False)


@dataclass
class Constraint:
    expr: str  # Python over the prologue's names of symbolic inputs, true for the traced call
    display: str  # the same, for people
    kind: str  # "branch" (a truth value decided), "specialize" (a value needed as a plain number), "check"
    # (sizes eager requires equal: it raises otherwise)
    reason: str  # what decided it ("`if`", "range()", "torch.zeros needs a concrete value", ...)
    location: object  # compiler.core.source.SourceLocation of the user's line
    decided_at: tuple | None  # (filename, lineno) of the innermost frame that decided (library code too)
    after_read: int | None = None  # it names a number read from a tensor (segments): checked after read #i


def _lit(x) -> str:
    if isinstance(x, SYM_TYPES):
        return x.pexpr
    if type(x) is float:
        if math.isnan(x):
            return "math.nan"
        if math.isinf(x):
            return "math.inf" if x > 0 else "-math.inf"
    return repr(x)


def _bare(e: str) -> str:
    """`(n > 5)` -> `n > 5` when the outer parentheses enclose the whole expression."""
    if not (e.startswith("(") and e.endswith(")")):
        return e
    depth = 0
    for i, ch in enumerate(e):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and i < len(e) - 1:
            return e
    return e[1:-1]


_NEGATED = {" > ": " <= ", " >= ": " < ", " < ": " >= ", " <= ": " > ", " == ": " != ", " != ": " == "}


def negate(expr: str) -> str:
    """`n > 5` -> `n <= 5`; anything else -> `not (...)`."""
    bare = _bare(expr)
    ops = [op for op in _NEGATED if op in bare]
    if len(ops) == 1 and bare.count(ops[0]) == 1 and "(" not in bare and " and " not in bare and " or " not in bare:
        return bare.replace(ops[0], _NEGATED[ops[0]])
    return f"not ({bare})"


def _cname(x) -> str:
    """x as the computation trace names it."""
    if isinstance(x, SYM_TYPES):
        return x.name
    return _lit(x)


def _print_scalar(bsym, trace):
    return [f"{bsym.output.name} = {bsym.args[0]}"]


# A scalar op of the computation trace: prints `i3 = n + 1`; EFFECT keeps it through DCE and CSE.
SCALAR = Symbol("scalar", None, Tag.EFFECT, meta=None, printer=_print_scalar)


def _state():
    return current_state()


def _location():
    loc = user_location(3)
    decided = None
    if INTERPRETERS and INTERPRETERS[-1].active:
        where = INTERPRETERS[-1].active[-1].location()
        decided = (where.filename, where.lineno)
    elif loc is not None:
        decided = (loc.filename, loc.lineno)
    return loc, decided


def _record(kind_cls, value, pexpr: str, cexpr: str, operands=()):
    """A new symbolic value computed by the scalar op `cexpr` (computation names)."""
    state = _state()
    if state is None or not getattr(state, "symbolic", False):  # outside tracing: a plain number
        return value
    if kind_cls is SymBool:
        out = SymBool(state.trace.new_name("b"), value, pexpr)
    elif type(value) is int:
        out = SymInt(state.trace.new_name("i"), value, pexpr)
    elif type(value) is float:
        out = SymFloat(state.trace.new_name("f"), value, pexpr)
    else:
        return value
    loc, _ = _location()
    # (operands: what it reads, for passes and segments that look for the names a bound symbol uses)
    state.scopes[0].append(BoundSymbol(SCALAR, (cexpr,), {"operands": tuple(o for o in operands if isinstance(o, SYM_TYPES))},
                                       out, location=loc))
    return out


def constrain(sym, holds: str, display: str, kind: str, reason: str) -> None:
    state = _state()
    if state is None or not getattr(state, "symbolic", False):
        return
    loc, decided = _location()
    c = Constraint(holds, display, kind, reason, loc, decided, _after_read(state, holds))
    if not any(o.expr == c.expr for o in state.constraints):  # (the prologue checks it once; TL301 per line)
        state.constraints.append(c)
    state.emit(ev.Event(ev.SYMBOLIC_CONSTRAINT, f"{reason} specializes the trace on `{display}`", loc,
                        details={"constraint": display, "kind": kind, "reason": reason, "decided_at": decided,
                                 "after_read": c.after_read,
                                 "values": sorted(_input_names(sym))}))


def _after_read(state, expr: str):
    """The last data read (segment boundary) whose value `expr` names; None: only the prologue's inputs."""
    reads = getattr(state, "read_syms", None)
    if not reads:
        return None
    import ast

    names = {n.id for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name)}
    found = [reads[n] for n in names if n in reads]
    return max(found) if found else None


def read_value(state, name: str, value, index: int):
    """A number read from a tensor at segment boundary #index, as a symbolic input of the next segment
    (None when it must stay a constant: bools, nan/inf/0.0 floats, and once sizes are fixed)."""
    if not getattr(state, "symbolic", False) or type(value) not in (int, float) or \
            type(value) is float and (not math.isfinite(value) or value == 0.0):
        return None
    out = (SymInt if type(value) is int else SymFloat)(name, value)
    state.read_syms[name] = index
    state.read_sym_values.append(out)
    if state.sizes_fixed:  # sizes are concrete from here on: so is a number they could depend on
        specialize(out, "read after the sizes were specialized")
    return out


def symbolic_read_key(value) -> tuple | None:
    """The outcome key shared by every value a symbolic read accepts (the continuation's constraints
    decide), or None for a value kept constant (see read_value)."""
    if type(value) is int or type(value) is float and math.isfinite(value) and value != 0.0:
        return ("symbolic", type(value).__name__)
    return None


def _input_names(sym) -> set:
    return set(getattr(sym, "inputs", ()) or ())


def specialize(x, reason: str):
    """The plain value of a symbolic value Python needs as a number; the trace is then valid only for it."""
    if isinstance(x, SymBool):
        bool(x)
        return x.value
    if not isinstance(x, SYM_TYPES):
        return x
    v = x.value
    if isinstance(v, float) and (math.isnan(v) or (v == 0.0 and math.copysign(1.0, v) < 0)):
        state = _state()
        if getattr(getattr(state, "segmenter", None), "replay", None) is not None:
            # a new continuation of a symbolic entry cannot switch to constant values (its segments already
            # ran symbolically): it serves this call only
            _LOCAL.single_use.append(f"{reason}: {v!r} cannot be guarded by ==")
            return v
        raise Fallback(f"{reason}: {v!r} cannot be guarded by ==")
    constrain(x, f"{_bare(x.pexpr)} == {_lit(v)}", f"{_bare(x.pexpr)} == {_lit(v)}", "specialize", reason)
    return v


def concrete(x):
    """Values for meta computation (no constraint: the op keeps the symbolic value)."""
    if isinstance(x, SYM_TYPES):
        return x.value
    if type(x) in (list, tuple):
        return type(x)(concrete(i) for i in x)
    if type(x) is dict:
        return {k: concrete(v) for k, v in x.items()}
    if type(x) is slice:
        return slice(concrete(x.start), concrete(x.stop), concrete(x.step))
    return x


def specialize_all(x, reason: str):
    if isinstance(x, SYM_TYPES):
        return specialize(x, reason)
    if type(x) in (list, tuple):
        return type(x)(specialize_all(i, reason) for i in x)
    if type(x) is dict:
        return {k: specialize_all(v, reason) for k, v in x.items()}
    if type(x) is slice:
        return slice(specialize_all(x.start, reason), specialize_all(x.stop, reason), specialize_all(x.step, reason))
    return x


def has_symbolic(x) -> bool:
    if isinstance(x, SYM_TYPES):
        return True
    if type(x) in (list, tuple):
        return any(has_symbolic(i) for i in x)
    if type(x) is dict:
        return any(has_symbolic(v) for v in x.values())
    if type(x) is slice:
        return has_symbolic((x.start, x.stop, x.step))
    return False


# ---------------------------------------------------------------- the values

def _binop(symbol: str, fn, reflected: bool = False):
    def op(self, other):
        if isinstance(other, SymBool) or not isinstance(other, (int, float)):
            return NotImplemented
        a, b = (other, self) if reflected else (self, other)
        value = fn(_val(a), _val(b))  # raises as Python does (ZeroDivisionError, OverflowError)
        if symbol == "**" and isinstance(_val(b), int) and not isinstance(_val(b), bool) and \
                isinstance(_val(a), int) and isinstance(b, SYM_TYPES):
            # int ** int is an int for exponents >= 0 and a float otherwise: the type is a decision
            holds = f"{b.pexpr} >= 0" if _val(b) >= 0 else f"{b.pexpr} < 0"
            constrain(b, holds, holds, "branch", "`**` (the result type depends on the exponent's sign)")
        return _record(None, value, f"({_lit(a)} {symbol} {_lit(b)})", f"{_cname(a)} {symbol} {_cname(b)}", (a, b))

    return op


def _val(x):
    if isinstance(x, SYM_TYPES):
        return x.value
    return x


def _cmp(symbol: str, fn):
    def op(self, other):
        if isinstance(other, SymBool) or not isinstance(other, (int, float)):
            return NotImplemented
        value = fn(self.value, _val(other))
        return _record(SymBool, value, f"({_lit(self)} {symbol} {_lit(other)})",
                       f"{_cname(self)} {symbol} {_cname(other)}", (self, other))

    return op


def _unop(symbol: str, fn, fmt: str):
    def op(self):
        value = fn(self.value)
        return _record(None, value, fmt.format(_lit(self)), fmt.format(_cname(self)), (self,))

    return op


class _SymNumber(Symbolic):
    """Shared behaviour of SymInt and SymFloat (mixed into the IntegerProxy/FloatProxy subclasses)."""

    def __bool__(self):
        holds = f"{self.pexpr} != 0" if self.value else f"{self.pexpr} == 0"
        constrain(self, holds, holds, "branch", "a decision")
        return bool(self.value)

    def __hash__(self):
        return hash(specialize(self, "used as a dict key or set member"))

    def __index__(self):
        return specialize(self, "used as an index")

    def __int__(self):
        return int(specialize(self, "int()"))

    def __float__(self):
        return float(specialize(self, "float()"))

    def __repr__(self):
        return repr(specialize(self, "formatted into a string"))

    __str__ = __repr__

    def __format__(self, spec):
        return format(specialize(self, "formatted into a string"), spec)

    def __reduce__(self):
        return (type(self.value), (specialize(self, "pickled"),))

    def __round__(self, ndigits=None):
        if ndigits is not None:
            nd = specialize(ndigits, "round() digits")
            return _record(None, round(self.value, nd), f"round({self.pexpr}, {nd!r})", f"round({self.name}, {nd!r})",
                           (self,))
        return _record(None, round(self.value), f"round({self.pexpr})", f"round({self.name})", (self,))

    # int/float attributes that C would answer with plain numbers
    real = property(lambda self: self)
    imag = property(lambda self: type(self.value)(0))

    def conjugate(self):
        return self

    def __trunc__(self):
        return _record(None, math.trunc(self.value), f"math.trunc({self.pexpr})", f"math.trunc({self.name})", (self,))

    def __floor__(self):
        return _record(None, math.floor(self.value), f"math.floor({self.pexpr})", f"math.floor({self.name})", (self,))

    def __ceil__(self):
        return _record(None, math.ceil(self.value), f"math.ceil({self.pexpr})", f"math.ceil({self.name})", (self,))


_ARITH = {"__add__": ("+", operator.add), "__sub__": ("-", operator.sub), "__mul__": ("*", operator.mul),
          "__truediv__": ("/", operator.truediv), "__floordiv__": ("//", operator.floordiv),
          "__mod__": ("%", operator.mod), "__pow__": ("**", operator.pow)}
_INT_ONLY = {"__and__": ("&", operator.and_), "__or__": ("|", operator.or_), "__xor__": ("^", operator.xor),
             "__lshift__": ("<<", operator.lshift), "__rshift__": (">>", operator.rshift)}
_COMPARE = {"__lt__": ("<", operator.lt), "__le__": ("<=", operator.le), "__gt__": (">", operator.gt),
            "__ge__": (">=", operator.ge), "__eq__": ("==", operator.eq), "__ne__": ("!=", operator.ne)}


def _fill(cls, table):
    for name, (symbol, fn) in table.items():
        setattr(cls, name, _binop(symbol, fn))
        setattr(cls, "__r" + name[2:], _binop(symbol, fn, reflected=True))


class SymInt(_SymNumber, IntegerProxy):
    def __new__(cls, name: str, value: int, pexpr: str | None = None, inputs=None):
        obj = IntegerProxy.__new__(cls, name, value)
        obj.pexpr = pexpr or name  # Python over the prologue's input names
        return obj

    @property
    def value(self) -> int:
        return int.__int__(self)

    numerator = property(lambda self: self)
    denominator = property(lambda self: 1)


class SymFloat(_SymNumber, FloatProxy):
    def __new__(cls, name: str, value: float, pexpr: str | None = None, inputs=None):
        obj = FloatProxy.__new__(cls, name, value)
        obj.pexpr = pexpr or name
        return obj

    @property
    def value(self) -> float:
        return float.__float__(self)

    def is_integer(self):
        v = self.value.is_integer()
        holds = f"({self.pexpr}).is_integer()" if v else f"not ({self.pexpr}).is_integer()"
        constrain(self, holds, holds, "branch", "float.is_integer()")
        return v


for _cls in (SymInt, SymFloat):
    _fill(_cls, _ARITH)
    for _name, (_sym, _fn) in _COMPARE.items():
        setattr(_cls, _name, _cmp(_sym, _fn))
    _cls.__neg__ = _unop("-", operator.neg, "(-{})")
    _cls.__pos__ = _unop("+", operator.pos, "(+{})")
    _cls.__abs__ = _unop("abs", abs, "abs({})")
    _cls.__hash__ = _SymNumber.__hash__
_fill(SymInt, _INT_ONLY)
SymInt.__invert__ = _unop("~", operator.invert, "(~{})")


class SymBool(Symbolic):
    """The result of comparing symbolic values. Not a bool (bool cannot be subclassed): its truth value is a
    decision, recorded as a constraint where Python asks for it."""

    __slots__ = ("name", "value", "pexpr")

    def __init__(self, name: str, value: bool, pexpr: str):
        self.name, self.value, self.pexpr = name, bool(value), pexpr

    def __bool__(self):
        holds = _bare(self.pexpr) if self.value else negate(self.pexpr)
        constrain(self, holds, holds, "branch", "a decision")
        return self.value

    def __hash__(self):
        return hash(bool(self))

    def __eq__(self, other):
        return bool(self) == other

    def __repr__(self):
        return repr(bool(self))

    __str__ = __repr__

    def __index__(self):
        return int(bool(self))

    def __int__(self):
        return int(bool(self))

    def __float__(self):
        return float(bool(self))

    # arithmetic on a comparison's result (sum(s == -1 for s in x.size())): as bool's, once it is decided
    def __add__(self, other):
        return int(self) + other

    def __radd__(self, other):
        return other + int(self)

    def __sub__(self, other):
        return int(self) - other

    def __rsub__(self, other):
        return other - int(self)

    def __mul__(self, other):
        return int(self) * other

    def __rmul__(self, other):
        return other * int(self)

    def __and__(self, other):
        return bool(self) & other

    __rand__ = __and__

    def __or__(self, other):
        return bool(self) | other

    __ror__ = __or__


SYM_TYPES = (SymInt, SymFloat, SymBool)


# ---------------------------------------------------------------- conversions the interpreter looks aside to

def _int(*args, **kwargs):
    if len(args) == 1 and not kwargs and type(args[0]).__name__ == "TensorProxy":
        return args[0]._read_number("int(tensor)", "int")  # builtins.int would drop a symbolic result
    if len(args) == 1 and not kwargs and isinstance(args[0], SYM_TYPES):
        x = args[0]
        if isinstance(x, SymBool):
            return _record(None, int(x.value), f"int({x.pexpr})", f"int({x.name})", (x,))
        return _record(None, int(x.value), f"int({x.pexpr})", f"int({x.name})", (x,))
    return builtins.int(*specialize_all(args, "int()"), **kwargs)


def _float(*args, **kwargs):
    if len(args) == 1 and not kwargs and type(args[0]).__name__ == "TensorProxy":
        return args[0]._read_number("float(tensor)", "float")
    if len(args) == 1 and not kwargs and isinstance(args[0], SYM_TYPES):
        x = args[0]
        return _record(None, float(x.value), f"float({x.pexpr})", f"float({x.name})", (x,))
    return builtins.float(*specialize_all(args, "float()"), **kwargs)


def _bool(*args, **kwargs):
    if len(args) == 1 and not kwargs and isinstance(args[0], SymBool):
        return args[0]  # stays symbolic until Python decides on it
    if len(args) == 1 and not kwargs and isinstance(args[0], (SymInt, SymFloat)):
        x = args[0]
        return _record(SymBool, bool(x.value), f"({x.pexpr} != 0)", f"{x.name} != 0", (x,))
    return builtins.bool(*args, **kwargs)


def _math(fn):
    name = fn.__name__

    def replacement(*args, **kwargs):
        if kwargs or not any(isinstance(a, (SymInt, SymFloat)) for a in args) or \
                any(isinstance(a, SymBool) for a in args):
            return fn(*specialize_all(args, f"math.{name}()"), **specialize_all(kwargs, f"math.{name}()"))
        value = fn(*(_val(a) for a in args))
        return _record(None, value, f"math.{name}({', '.join(_lit(a) for a in args)})",
                       f"math.{name}({', '.join(_cname(a) for a in args)})", args)

    return replacement


_MATH = ("sqrt exp log log2 log10 log1p expm1 sin cos tan asin acos atan atan2 sinh cosh tanh floor ceil trunc "
         "fabs pow hypot copysign fmod erf erfc gamma lgamma degrees radians").split()


def _len(obj):
    # builtins.len turns what __len__ returns into a plain int natively: ask the tensor for its first size
    if type(obj).__name__ == "TensorProxy":
        if obj.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return obj.shape[0]
    return builtins.len(obj)


def _isinstance_for(real):
    def answer(obj, cls):
        # a comparison of symbolic values stands for a bool in user code (torch's guard_or_false asserts it);
        # the compiler's own code, not interpreted, still sees a SymBool
        if type(obj) is SymBool and real(obj.value, cls):
            return True
        return real(obj, cls)

    return answer


def lookasides() -> dict:
    table = {builtins.int: _int, builtins.float: _float, builtins.bool: _bool, builtins.len: _len,
             _real_isinstance: _isinstance_for(_real_isinstance), tracing_isinstance: _isinstance_for(tracing_isinstance)}
    table |= {getattr(math, n): _math(getattr(math, n)) for n in _MATH if hasattr(math, n)}
    return table


# ---------------------------------------------------------------- native code

_COMPILER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # compiler/
# Natives that reach symbolic values only through their Python methods (comparisons, arithmetic, hashing,
# formatting), or never look at them: they may receive them unchanged.
_PROTOCOL_NATIVES = {id(f) for f in (isinstance, issubclass, type, id, len, callable, getattr, hasattr, iter, list,
                                     tuple, dict, zip, repr, str, format, abs, min, max, sorted, sum, divmod, pow,
                                     round, print, hash, set, frozenset, any, all, reversed, map, filter, next,
                                     operator.add, operator.sub, operator.truediv, operator.floordiv,
                                     operator.neg, operator.pos, operator.abs, operator.lt, operator.le,
                                     operator.gt, operator.ge, operator.eq, operator.ne, operator.not_,
                                     operator.truth, operator.is_, operator.is_not, operator.contains)}


def _torch_callable(fn) -> bool:
    if isinstance(fn, type):  # torch.device(n), torch.Generator(...): native constructors read plain numbers;
        return fn is torch.Size  # torch.Size keeps the int objects it is given (symbolic sizes stay)
    if isinstance(fn, types.FunctionType):
        return fn.__code__.co_filename.startswith(_COMPILER_DIR)  # proxies' methods: they dispatch to the tracer
    if getattr(fn, "__objclass__", None) is torch._C.TensorBase:
        return True
    owner = getattr(fn, "__self__", None)
    if owner is not None and type(owner).__name__ == "TensorProxy":
        return True
    module = getattr(fn, "__module__", None) or ""
    return module == "torch" or module.startswith("torch.") or module.startswith("torch._C")


def native_args(fn, args, kwargs):
    """Arguments for native `fn`: symbolic values it would read as plain numbers are specialized."""
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, SYM_TYPES) and not isinstance(fn, types.FunctionType):
        # a native method of int/float (n.bit_length(), f.hex()) reads the value: it is decided
        specialize(owner, f"{getattr(fn, '__name__', 'a method')}() of it")
    if not has_symbolic((args, kwargs)) or id(fn) in _PROTOCOL_NATIVES:
        return args, kwargs
    if _torch_callable(fn):  # numbers stay symbolic for the tracer, but a SymBool is no bool to torch's parser
        if any(isinstance(v, SymBool) for v in _leaves((args, kwargs))):
            return _decide_bools(args), _decide_bools(kwargs)
        return args, kwargs
    if getattr(fn, "__objclass__", None) is int and not any(isinstance(a, (SymInt, SymBool)) for a in args):
        return args, kwargs  # int.__add__(0, a SymFloat): NotImplemented without reading it (then __radd__)
    if fn in (operator.getitem, operator.setitem, operator.delitem):
        if type(args[0]).__name__ == "TensorProxy":
            return args, kwargs  # indexing a traced tensor: the torch op decides
        key = specialize_all(args[1], "indexing a Python sequence or dict with it")
        return (args[0], key, *args[2:]), kwargs  # (the container and a stored value are not read as numbers)
    if fn in (operator.mul, operator.imul, operator.mod, operator.add, operator.iadd) and len(args) == 2:
        seq = (list, tuple, str, bytes, bytearray)
        if not isinstance(args[0], seq) and not isinstance(args[1], seq):
            return args, kwargs  # number arithmetic: the Python methods record it
        reason = "a sequence repeated by it (the length)" if fn in (operator.mul, operator.imul) else \
            "formatting into a string"
        return tuple(a if isinstance(a, seq) else specialize_all(a, reason) for a in args), kwargs
    if type(owner) in (list, dict, set) and getattr(fn, "__name__", "") in _STORING_METHODS:
        return args, kwargs  # stored, not read
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    reason = "range(): the loop's trip count" if fn is range else f"the native call {name}() needs a plain number"
    return specialize_all(tuple(args), reason), specialize_all(dict(kwargs), reason)


def _leaves(x) -> list:
    if type(x) in (list, tuple):
        return [v for i in x for v in _leaves(i)]
    if type(x) is dict:
        return [v for i in x.values() for v in _leaves(i)]
    return [x]


def _decide_bools(x):
    """SymBools decided (a constraint each), everything else as it is."""
    if isinstance(x, SymBool):
        return bool(x)
    if type(x) in (list, tuple):
        return type(x)(_decide_bools(i) for i in x)
    if type(x) is dict:
        return {k: _decide_bools(v) for k, v in x.items()}
    return x


_STORING_METHODS = frozenset("append extend copy get setdefault update keys values items count index remove add "
                             "discard __contains__".split())


# ---------------------------------------------------------------- names and the prologue

_RESERVED = set(dir(builtins)) | {"torch", "F", "Tensor", "inf", "nan", "math", "prims", "args", "kwargs", "operator"}


def input_name(label: str, taken: set) -> str:
    """A readable, unique identifier for a symbolic input (the parameter's name where possible)."""
    import keyword
    import re

    base = re.sub(r"\W", "_", label).strip("_") or "n"
    if base[0].isdigit():
        base = "n_" + base
    if keyword.iskeyword(base) or base in _RESERVED or re.fullmatch(r"(t|i|f|b|v|c|g|_k)\d+", base):
        base += "_"
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def check_only(decided_at) -> bool:
    """Whether the decision at (filename, lineno) only checks: an `assert`, or an `if` whose branches only
    raise (input validation: the values the trace computes stay the same)."""
    import ast

    if decided_at is None:
        return False
    filename, lineno = decided_at
    source = "".join(linecache.getlines(filename))
    if not source:
        return False
    try:
        tree = _parsed(filename, source)
    except (SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert) and node.lineno <= lineno <= (node.end_lineno or node.lineno):
            return True
        if isinstance(node, ast.If) and node.test.lineno <= lineno <= (node.test.end_lineno or node.test.lineno):
            return _raises_only(node.body) and (not node.orelse or _raises_only(node.orelse))
    return False


_PARSED: dict = {}


def _parsed(filename, source):
    import ast

    hit = _PARSED.get(filename)
    if hit is None or hit[0] != source:
        hit = (source, ast.parse(source))
        _PARSED[filename] = hit
    return hit[1]


def _raises_only(body) -> bool:
    import ast

    return all(isinstance(s, (ast.Raise, ast.Pass)) or isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
               for s in body) and any(isinstance(s, ast.Raise) for s in body)
