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

from .proxies import FloatProxy, IntegerProxy
from .symbols import Symbol, Tag

_LOCAL = threading.local()


class Fallback(BaseException):
    """Symbolic tracing met something it cannot keep sound: trace this call again with constant values.
    A BaseException, so that the user's `except Exception` in the traced code does not catch it."""


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
    location: object  # compiler.source.SourceLocation of the user's line
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
    from .trace import current_state

    return current_state()


def _location():
    from .source import user_location

    loc = user_location(3)
    decided = None
    from .source import _INTERPRETERS

    if _INTERPRETERS and _INTERPRETERS[-1].active:
        where = _INTERPRETERS[-1].active[-1].location()
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
    from .symbols import BoundSymbol

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
    from . import events as ev

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


class _SymNumber:
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


class SymBool:
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
    from .builtin_answers import _real_isinstance, tracing_isinstance

    table = {builtins.int: _int, builtins.float: _float, builtins.bool: _bool, builtins.len: _len,
             _real_isinstance: _isinstance_for(_real_isinstance), tracing_isinstance: _isinstance_for(tracing_isinstance)}
    table |= {getattr(math, n): _math(getattr(math, n)) for n in _MATH if hasattr(math, n)}
    return table


# ---------------------------------------------------------------- native code

_COMPILER_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
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
    if isinstance(fn, type):  # torch.Size(...), torch.device(...): native constructors read plain numbers
        return False
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
    if not has_symbolic((args, kwargs)) or id(fn) in _PROTOCOL_NATIVES or _torch_callable(fn):
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


_STORING_METHODS = frozenset("append extend copy get setdefault update keys values items count index remove add "
                             "discard __contains__".split())


# ---------------------------------------------------------------- torch ops

# Ops whose Python-number operands only enter elementwise arithmetic: the output's metadata does not depend
# on their values, so they stay symbolic (the executor receives each call's value).
_SCALAR_OPERAND_OPS = frozenset((
    "add sub mul div true_divide floor_divide remainder fmod pow float_power rsub clamp clip clamp_min clamp_max "
    "masked_fill fill full_like where lerp eq ne lt le gt ge addcmul addcdiv leaky_relu hardtanh threshold elu "
    "celu softplus xlogy hypot truediv floordiv mod bitwise_and bitwise_or bitwise_xor and or xor full "
    "nan_to_num logaddexp special_xlogy scalar_tensor mul_scalar").split())


def _base_name(name: str) -> str:
    n = name.rsplit(".", 1)[-1]
    if n.startswith("__") and n.endswith("__"):
        n = n[2:-2]
        if n[:1] in "ri" and n[1:] in _SCALAR_OPERAND_OPS:
            n = n[1:]
    return n.rstrip("_")


def for_op(symbol, args, kwargs):
    """A torch op's arguments under symbolic values: top-level scalar operands of elementwise ops stay
    symbolic; every other symbolic value (shapes, dims, sizes inside lists) is specialized."""
    if not has_symbolic((args, kwargs)):
        return args, kwargs
    reason = f"{symbol.name} needs a concrete value (it decides the result's shape or layout)"
    if symbol.fn is None or _base_name(symbol.name) not in _SCALAR_OPERAND_OPS | _keeps_numbers():
        return specialize_all(tuple(args), reason), specialize_all(dict(kwargs), reason)
    keep = (SymInt, SymFloat)
    if _base_name(symbol.name) in _keeps_numbers():  # shapes given as numbers: the shape rule follows them
        return args, kwargs
    args = tuple(a if isinstance(a, keep) else specialize_all(a, reason) for a in args)
    kwargs = {k: v if isinstance(v, keep) else specialize_all(v, reason) for k, v in kwargs.items()}
    return args, kwargs


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


# ---------------------------------------------------------------- symbolic sizes
#
# Design: meta tensors keep this call's concrete sizes (every meta computation is eager's); a proxy also
# carries `sym_shape`, its sizes as expressions of the symbolic input sizes, for the ops whose shape rule
# is known below. Sizes 0 and 1 are specialized (as torch's dynamic shapes do); the others are SymInts the
# prologue reads from the tensors (`a_shape0 = v1.shape[0]`). A proxy whose sizes no rule gives is UNKNOWN:
# Python reading its size specializes every symbolic input (`fix_sizes`), after which concrete sizes are
# exact. So a size read is always either a symbolic expression or guarded.

UNKNOWN = "unknown"


def read_shape(proxy, reason: str):
    """The sizes Python sees for `proxy`: a tuple holding SymInts, or None (the meta sizes are exact)."""
    state = _state()
    if state is None or not getattr(state, "symbolic", False) or state.sizes_fixed or state.depth > 0:
        return None  # (depth > 0: a decomposition into prims, which only the analysis reads)
    s = proxy.sym_shape
    if s is None:
        return None
    if s is UNKNOWN:
        fix_sizes(state, reason)
        return None
    return s


def fix_sizes(state, reason: str) -> None:
    """Specialize every symbolic input: from here on, every size the trace computes is a constant."""
    state.sizes_fixed = True
    for p in [*state.inputs, *state.read_sym_values]:
        if isinstance(p, (SymInt, SymFloat)):
            specialize(p, reason)
        sizes = getattr(p, "sym_shape", None)
        if isinstance(sizes, tuple):
            for d in sizes:
                specialize(d, reason)


class _Unknown(Exception):
    pass


def _sym(t):
    s = t.sym_shape
    if s is UNKNOWN:
        raise _Unknown
    return tuple(t.meta.shape) if s is None else s


def _eq_size(a, b):
    """One size from two that must be equal (broadcasting, matmul): a constraint when symbolic."""
    if isinstance(a, SymInt) or isinstance(b, SymInt):
        if isinstance(a, SymInt) and isinstance(b, SymInt) and a.name == b.name:
            return a
        if _val(a) != _val(b):
            raise _Unknown
        # eager raises when they differ: a check (a constraint, but no decision of the computation: no TL301)
        holds = f"{_bare(_lit(a))} == {_bare(_lit(b))}"
        constrain(a, holds, holds, "check", "sizes that must match (eager raises otherwise)")
        return a if isinstance(a, SymInt) else b
    return a


def _not_one(d):
    """Broadcasting treats a size 1 apart: a symbolic size in a broadcast is decided to be 1 or not."""
    if not isinstance(d, SymInt) or getattr(d, "at_least_2", False):
        return d
    if d.value == 1:
        return specialize(d, "a size broadcast against another (1 broadcasts)")
    holds = f"{_bare(d.pexpr)} != 1"
    constrain(d, holds, holds, "check", "a size broadcast against another (1 broadcasts)")
    return d


def _broadcast(shapes):
    nd = max(len(s) for s in shapes)
    if len(shapes) > 1:
        shapes = [tuple(_not_one(d) for d in s) for s in shapes]
    out = []
    for i in range(nd):
        dims = [s[len(s) - nd + i] for s in shapes if len(s) - nd + i >= 0]
        dims = [d for d in dims if not (type(d) is int and d == 1)] or [1]
        d = dims[0]
        for other in dims[1:]:
            d = _eq_size(d, other)
        out.append(d)
    return tuple(out)


def _prod(sizes):
    total = None
    for d in sizes:
        total = d if total is None else total * d
    return 1 if total is None else total


def _dim(d, nd):
    return d + nd if d < 0 else d


_SAME_SHAPE = frozenset((
    "abs neg exp exp2 expm1 log log2 log10 log1p sin cos tan tanh sinh cosh asin acos atan sigmoid relu relu6 gelu "
    "silu mish elu selu celu softplus softsign sqrt rsqrt reciprocal sign square erf erfc erfinv trunc floor ceil "
    "round frac softmax log_softmax dropout layer_norm rms_norm group_norm clone contiguous detach to type_as "
    "float double half bfloat16 int long bool logical_not bitwise_not hardswish hardsigmoid tril triu "
    "masked_fill nan_to_num positive alias requires_grad").split()) | _SCALAR_OPERAND_OPS - {"full", "scalar_tensor"}


def _tensors(args, kwargs):
    from .proxies import TensorProxy

    return [a for a in list(args) + list(kwargs.values()) if isinstance(a, TensorProxy)]


def _rule(name, args, kwargs, outs):
    """Symbolic sizes of each tensor output, or raise _Unknown."""
    from .proxies import TensorProxy

    if name in ("max", "min") and isinstance(args[0], TensorProxy) and \
            isinstance(args[1] if len(args) > 1 else kwargs.get("other"), TensorProxy):
        return [_broadcast([_sym(t) for t in _tensors(args, kwargs)])]  # torch.max(a, b): elementwise
    if name in _SAME_SHAPE:
        if name in ("layer_norm", "rms_norm", "group_norm", "dropout", "softmax", "log_softmax"):
            return [_sym(args[0])]
        return [_broadcast([_sym(t) for t in _tensors(args, kwargs)])]
    if name in ("view", "reshape") and isinstance(args[0], TensorProxy):
        sizes = args[1] if len(args) == 2 and type(args[1]) in (tuple, list, torch.Size) else args[1:]
        sizes = list(kwargs.get("shape", kwargs.get("size", sizes)))
        total = _prod(_sym(args[0]))
        for s in sizes:  # a symbolic -1 would infer the size: the trace assumes given sizes
            if isinstance(s, SymInt):
                holds = f"{_bare(s.pexpr)} >= 0"
                if s.value < 0:
                    raise _Unknown
                constrain(s, holds, holds, "check", "a size given to view/reshape")
        if sum(1 for s in sizes if type(s) is int and s == -1):
            known = _prod(s for s in sizes if not (type(s) is int and s == -1))
            sizes = [total // known if type(s) is int and s == -1 else s for s in sizes]
        return [tuple(sizes)]
    if name == "split" and isinstance(args[0], TensorProxy):
        t, split = args[0], args[1] if len(args) > 1 else kwargs["split_size_or_sections"]
        dim = args[2] if len(args) > 2 else kwargs.get("dim", 0)
        shape = _sym(t)
        dim = _dim(dim, len(shape))
        if type(split) in (list, tuple):
            return [shape[:dim] + (s,) + shape[dim + 1:] for s in split]
        n = len(outs)
        size = shape[dim]
        bool((size + split - 1) // split == n)  # the number of pieces is a decision
        return [shape[:dim] + ((split if i < n - 1 else size - split * (n - 1)),) + shape[dim + 1:] for i in range(n)]
    if name in ("transpose", "swapaxes", "swapdims"):
        shape = list(_sym(args[0]))
        d0, d1 = _dim(args[1], len(shape)), _dim(args[2], len(shape))
        shape[d0], shape[d1] = shape[d1], shape[d0]
        return [tuple(shape)]
    if name in ("t", "T", "mT") or name == "permute":
        shape = _sym(args[0])
        if name == "permute":
            order = args[1] if len(args) == 2 and type(args[1]) in (tuple, list) else args[1:]
            return [tuple(shape[_dim(d, len(shape))] for d in order)]
        return [shape[:-2] + (shape[-1], shape[-2])] if len(shape) >= 2 else [shape]
    if name == "linear":
        x, w = _sym(args[0]), _sym(args[1])
        _eq_size(x[-1], w[-1])
        return [x[:-1] + (w[0],)] if len(w) == 2 else [x[:-1]]
    if name in ("matmul", "bmm", "mm") and all(len(_sym(t)) >= 2 for t in args[:2]):
        a, b = _sym(args[0]), _sym(args[1])
        _eq_size(a[-1], b[-2])
        batch = _broadcast([a[:-2], b[:-2]]) if len(a) > 2 or len(b) > 2 else ()
        return [batch + (a[-2], b[-1])]
    if name == "scaled_dot_product_attention":
        q, v = _sym(args[0]), _sym(args[2])
        return [q[:-1] + v[-1:]]
    if name == "embedding":
        idx, w = _sym(args[0]), _sym(args[1])
        return [idx + (w[1],)]
    if name == "cat":
        tensors = args[0] if args else kwargs["tensors"]
        dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
        shapes = [_sym(t) for t in tensors if not (t.meta.ndim == 1 and t.meta.shape[0] == 0)]
        d = _dim(dim, len(shapes[0]))
        total = 0
        for s in shapes:
            total = total + s[d]
        return [shapes[0][:d] + (total,) + shapes[0][d + 1:]]
    if name == "arange" and len(args) == 1 and not _tensors(args, kwargs):
        return [(args[0],)]
    if name == "arange" and not _tensors(args, kwargs):  # arange(start, end[, step]) of ints
        from .shape_rules import arange_length

        return [(arange_length(args, kwargs),)]
    if name == "getitem" and isinstance(args[0], TensorProxy):
        return [_index_shape(_sym(args[0]), args[1])]
    if name in _REDUCTIONS and isinstance(args[0], TensorProxy):
        shape = _sym(args[0])
        dim = args[1] if len(args) > 1 and not isinstance(args[1], bool) else kwargs.get("dim", kwargs.get("axis"))
        keep = kwargs.get("keepdim", args[2] if len(args) > 2 and isinstance(args[2], bool) else False)
        if dim is None:
            return [()] * len(outs) if not keep else [(1,) * len(shape)] * len(outs)
        dims = {_dim(d, len(shape)) for d in (dim if type(dim) in (tuple, list) else (dim,))}
        out = tuple((1 if keep else None) if i in dims else s for i, s in enumerate(shape))
        return [tuple(s for s in out if s is not None)] * len(outs)
    if name == "unsqueeze":
        shape = list(_sym(args[0]))
        shape.insert(_dim(args[1], len(shape) + 1), 1)
        return [tuple(shape)]
    if name == "flatten" and len(args) == 1 and not kwargs:
        return [(_prod(_sym(args[0])),)]
    from .shape_rules import rule  # (the rules added for more ops)

    return rule(name, args, kwargs, outs)


_REDUCTIONS = frozenset("sum mean amax amin max min prod std var logsumexp all any argmax argmin".split())


def _index_shape(shape, key):
    """Basic indexing with ints, unit-step slices, None and ...; anything else is not followed."""
    key = key if type(key) is tuple else (key,)
    if sum(k is Ellipsis for k in key) > 1:
        raise _Unknown
    if any(k is Ellipsis for k in key):  # ... stands for the dims the other entries leave
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        rest = len(shape) - sum(k is not None for k in key if k is not Ellipsis)
        key = key[:i] + (slice(None),) * max(rest, 0) + key[i + 1:]
    if sum(k is not None for k in key) > len(shape):
        raise _Unknown
    out = []
    dims = iter(shape)
    for k in key:
        if k is None:  # a new dim of size 1
            out.append(1)
            continue
        size = next(dims)
        if type(k) is slice:
            if k.step not in (None, 1):
                raise _Unknown
            start = 0 if k.start is None else k.start
            stop = size if k.stop is None else k.stop
            if type(start) is int and start < 0 or type(stop) is int and stop < 0:
                raise _Unknown
            # eager clamps the bounds; the trace assumes they are in range (a constraint when symbolic)
            if not (start >= 0 and start <= stop and stop <= size):
                raise _Unknown
            out.append(size if k.start is None and k.stop is None else stop - start)
        elif isinstance(k, int) and not isinstance(k, bool):
            continue  # selects: the dim goes
        else:
            raise _Unknown
    return tuple(out) + tuple(dims)


_KEEPS: list = []


def _keeps_numbers() -> frozenset:
    """Ops whose number arguments (sizes) their shape rule follows: they stay symbolic."""
    if not _KEEPS:
        from .shape_rules import KEEPS_NUMBERS

        _KEEPS.append(frozenset(("view", "reshape", "split", "arange", "getitem")) | KEEPS_NUMBERS)
    return _KEEPS[0]


def set_output_shapes(symbol, args, kwargs, out) -> None:
    """After an op is recorded: the symbolic sizes of its new tensor outputs."""
    from . import tree as pytree
    from .proxies import TensorProxy

    tensors = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, TensorProxy)]
    involved = any(t.sym_shape is not None for t in tensors) or has_symbolic((args, kwargs))
    outs = [o for o in pytree.tree_leaves(out) if isinstance(o, TensorProxy)]
    fresh = [o for o in outs if all(o is not t for t in tensors)]
    if not involved or not fresh:
        return
    try:
        shapes = _rule(_base_name(symbol.name), args, kwargs, outs)
        if len(shapes) != len(outs):
            raise _Unknown
        for o, s in zip(outs, shapes):
            s = tuple(s)
            if len(s) != o.meta.ndim or any(_val(d) != m for d, m in zip(s, o.meta.shape)):
                raise _Unknown  # a rule that disagrees with eager's meta: never trust it
    except (_Unknown, IndexError, KeyError, TypeError, ValueError, AttributeError):
        for o in fresh:
            o.sym_shape = UNKNOWN
        return
    for o, s in zip(outs, shapes):
        if any(o is t for t in fresh):
            s = tuple(s)
            o.sym_shape = s if any(isinstance(d, SymInt) for d in s) else None
