"""The symbol table of the torch language: torch functions, tensor methods and operators, each mapped to a Symbol.

`TORCH_SYMBOLS` (callable -> Symbol) is public: the native front end dispatches through it today and the
bytecode interpreter (next issue) will use it as its table of lookasides. A call of a torch callable with
no entry raises UnsupportedOpError naming the op and the user's source line.
"""
from __future__ import annotations

import dataclasses
import types

import torch
from torch.overrides import TorchFunctionMode

from ..core import proxies
from ..core import tree as pytree
from ..core.errors import UnsupportedOpError
from ..core.proxies import TensorProxy
from ..core.source import INTERPRETERS, user_location
from ..core.symbols import Symbol, Tag
from ..interpreter import provenance as pv
from ..meta.functions import CREATION_FUNCTIONS, generic_meta
from ..symbolic.values import has_symbolic, specialize_all
from . import schemas

TORCH_SYMBOLS: dict[object, Symbol] = {}
_BY_NAME: dict[str, Symbol] = {}
_PREFIXES = (("torch.nn.functional.", "F."), ("torch.Tensor.", "Tensor."))


def printed_name(qualname: str) -> str:
    for long, short in _PREFIXES:
        if qualname.startswith(long):
            return short + qualname[len(long):]
    return qualname


def resolve(qualname: str):
    obj = torch
    for part in qualname.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def register(qualname: str, tags: Tag = Tag.NONE, *, meta=None, decomposition=None, inplace_arg: int | None = None):
    """Map the torch callable `qualname` to a new Symbol. Names missing from this torch version are skipped."""
    fn = resolve(qualname)
    if fn is None or fn in TORCH_SYMBOLS:
        return None
    sym = Symbol(printed_name(qualname), fn, tags, meta or generic_meta, decomposition)
    sym.inplace_arg = inplace_arg
    TORCH_SYMBOLS[fn] = sym
    _BY_NAME[sym.name] = sym
    if tags & Tag.CREATION:
        CREATION_FUNCTIONS.add(fn)
    return sym


def register_property(attr: str, tags: Tag = Tag.NONE) -> Symbol:
    """A tensor property that computes (x.mT): its symbol prints and runs as the attribute read itself."""
    getter = proxies.PROPERTY_GETTERS[attr]

    def printer(bsym, trace):
        return [f"{bsym.output.name} = {trace.expr(bsym.args[0])}.{attr}"]

    sym = Symbol(f"Tensor.{attr}", getter, tags, generic_meta, printer=printer)
    TORCH_SYMBOLS[getter] = sym
    _BY_NAME[sym.name] = sym
    return sym


def symbol_for(name: str) -> Symbol:
    """The symbol printed as `name` ("torch.add", "Tensor.reshape", "F.linear")."""
    return _BY_NAME[name]


_VARIANTS: dict[int, Symbol] = {}


def _inplace_variant(sym: Symbol) -> Symbol:
    """The same op called with `out=` or `inplace=True`: it writes into a tensor, so it is tagged INPLACE."""
    v = _VARIANTS.get(id(sym))
    if v is None:
        v = dataclasses.replace(sym, tags=sym.tags | Tag.INPLACE, decomposition=None)
        _VARIANTS[id(sym)] = v
    return v


def _has_proxy(args, kwargs) -> bool:
    return any(isinstance(x, TensorProxy) for x in pytree.tree_leaves((args, kwargs)))


def _callable_name(func) -> str:
    mod = getattr(func, "__module__", None) or ""
    qn = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
    if getattr(func, "__objclass__", None) is torch._C.TensorBase or qn.startswith("TensorBase."):
        return "Tensor." + qn.split(".")[-1]
    if mod.startswith("torch.nn.functional"):
        return "F." + qn
    if mod in ("torch", "torch._C._VariableFunctions", "") or mod.startswith("torch._C"):
        return f"torch.{qn}"
    return f"{mod}.{qn}"


# Functions that answer from metadata (guarded by the prologue) rather than record an op.
METADATA_FUNCTIONS = {
    torch.numel: lambda x: x.numel(),
    torch.is_floating_point: lambda x: x.is_floating_point(),
    torch.is_complex: lambda x: x.is_complex(),
    torch.Tensor.dim: lambda x: x.dim(),
    torch.Tensor.ndimension: lambda x: x.dim(),
    torch.Tensor.nelement: lambda x: x.numel(),
    torch.Tensor.untyped_storage: lambda x: x.untyped_storage(),
    torch.Tensor.size: lambda x, *a: x.size(*a),
    torch.Tensor.numel: lambda x: x.numel(),
}


# Symbols derived from torch's operator schemas (torchlang/schemas.py), made on first use; None: no ATen op.
DERIVED_SYMBOLS: dict[object, Symbol | None] = {}


def derived_symbol(func) -> Symbol | None:
    try:
        return DERIVED_SYMBOLS[func]
    except KeyError:
        sym = DERIVED_SYMBOLS[func] = schemas.derive(func)
        return sym
    except TypeError:  # unhashable callable
        return None


def dispatch(func, args, kwargs):
    sym = TORCH_SYMBOLS.get(func)
    if sym is None and func in METADATA_FUNCTIONS and args and isinstance(args[0], TensorProxy):
        return METADATA_FUNCTIONS[func](*args, **kwargs)
    if sym is None:
        sym = derived_symbol(func)
        has_proxy = _has_proxy(args, kwargs)
        if sym is not None and not has_proxy and not sym.tags & (Tag.CREATION | Tag.RANDOM):
            sym = None  # no traced value and nothing created: computed natively, below
    if sym is None:
        if not has_proxy:
            # No traced value involved (e.g. reading a real tensor's .shape): run it natively.
            if has_symbolic((args, kwargs)):  # native code would read symbolic numbers as plain ints
                args, kwargs = specialize_all((tuple(args), dict(kwargs)), f"the native call {_callable_name(func)}()")
            with torch._C.DisableTorchFunction():
                return func(*args, **kwargs)
        interpreted = interpret_python(func, args, kwargs)
        if interpreted is not None:
            return interpreted[0]
        loc = user_location(3)
        where = f" at {loc.describe()}" if loc else ""
        raise UnsupportedOpError(f"{_callable_name(func)} is not supported by the thunder-lint compiler{where}")
    if kwargs.get("out") is not None:
        sym = _inplace_variant(sym)
    elif sym.inplace_arg is not None:
        flag = kwargs.get("inplace", args[sym.inplace_arg] if len(args) > sym.inplace_arg else False)
        if flag:
            sym = _inplace_variant(sym)
    return sym(*args, **kwargs)


proxies.DISPATCH = dispatch


class TracingMode(TorchFunctionMode):
    """Routes every torch call made while tracing (also those with no proxy argument, e.g. torch.zeros)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return dispatch(func, args, kwargs or {})


# ---------------------------------------------------------------- Python-level torch functions

def interpret_python(func, args, kwargs):
    """Run a Python-level torch function under the active interpreter (tracing mode on), so the ops it
    calls are traced one by one. None: no interpreter is active (the native front end refuses instead)."""
    if not isinstance(func, types.FunctionType) or not INTERPRETERS:
        return None
    with TracingMode():
        return (interpret_call(func, args, kwargs),)


def interpret_call(func, args, kwargs):
    """`func(*args, **kwargs)` under the active interpreter (its ops traced one by one)."""
    interp = INTERPRETERS[-1]
    provs = [pv.Computed("torch function argument")] * len(args)
    kwprovs = {k: pv.Computed("torch function argument") for k in kwargs}
    value, _ = interp.call(None, func, tuple(args), dict(kwargs), provs, kwprovs)
    return value
