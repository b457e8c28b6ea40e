"""Symbols derived from what torch itself declares, for torch callables with no hand-written entry.

A torch function or Tensor method implemented in C++ dispatches to an ATen operator whose schema torch
ships (`torch._C._jit_get_schemas_for_operator("aten::acosh_")`). The schema's alias annotations give the
tags by construction: `Tensor(a!) self` means the op writes into that argument (INPLACE), a `Tensor(a)`
result means it returns a view of an input (RETURNS_VIEW; torch uses the same annotation for ops that
may return a view or a copy, such as reshape, which stay hand-written as MAY_RETURN_VIEW for TL101); torch's `nondeterministic_seeded` operator tag
(or a Generator argument) means it draws random numbers (RANDOM); a `device` argument and no tensor
argument means it creates a tensor from nothing (CREATION). Metadata comes from running the op on meta
tensors, as for every other symbol. `out=` overloads are not looked at: a call with `out=` is tagged
INPLACE by the dispatcher already.

Hand-written entries (torchlang/ops.py) stay where a decomposition into prims or a special meta rule is
needed; tests/compiler/test_schemas.py checks their tags against these.
"""
from __future__ import annotations

import functools
import types

import torch

from ..core.errors import UnsupportedOpError
from ..meta.functions import CREATION_FUNCTIONS, generic_meta
from ..core.symbols import Symbol, Tag

# Modules of torch's C++ bindings whose function names are ATen operator names.
_NATIVE_MODULES = ("torch", "torch.functional", "torch._C._VariableFunctions", "torch._C._nn",
                   "torch._C._special", "torch._C._linalg", "torch._C._fft", "torch._C._nested")
_TENSOR_METHOD_TYPES = (types.MethodDescriptorType, types.WrapperDescriptorType)


def aten_name(func) -> str | None:
    """The ATen operator a torch callable dispatches to, or None (Python functions, non-ATen natives)."""
    if isinstance(func, (torch._ops.OpOverloadPacket, torch._ops.OpOverload)):  # torch.ops.aten.NAME(.overload)
        ns, _, name = func._schema.name.partition("::") if isinstance(func, torch._ops.OpOverload) else \
            func._qualified_op_name.partition("::")
        return name if ns == "aten" and schemas(name) else None
    if isinstance(func, _TENSOR_METHOD_TYPES) and getattr(func, "__objclass__", None) is torch._C.TensorBase:
        name = func.__name__
    elif isinstance(func, types.BuiltinFunctionType) and getattr(func, "__module__", None) in _NATIVE_MODULES:
        name = func.__name__
    else:
        return None
    if name.startswith("__") and name.endswith("__"):
        name = name[2:-2]
        name = {"radd": "add", "rmul": "mul", "rsub": "rsub", "rand": "bitwise_and", "ror": "bitwise_or",
                "rxor": "bitwise_xor", "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
                "lshift": "__lshift__", "rshift": "__rshift__"}.get(name, name)
    return name if schemas(name) else None


@functools.lru_cache(maxsize=None)
def schemas(name: str) -> tuple:
    """The non-`out=` schemas of aten::name (all overloads)."""
    try:
        found = torch._C._jit_get_schemas_for_operator(f"aten::{name}")
    except RuntimeError:
        return ()
    # (TorchScript's own list/str overloads, e.g. aten::sort.int on a list, say nothing about tensors)
    return tuple(s for s in found if not any(a.is_out for a in s.arguments)
                 and any("Tensor" in str(x.type) for x in (*s.arguments, *s.returns)))


def _operator_tags(name: str) -> set:
    packet = getattr(torch.ops.aten, name, None)
    tags = set()
    try:
        for overload in packet.overloads():
            tags.update(getattr(packet, overload).tags)
    except Exception:  # noqa: BLE001 - no packet, or an overload torch cannot load here
        pass
    return tags


@functools.lru_cache(maxsize=None)
def tags_for(name: str) -> Tag:
    """Tags of aten::name from its schemas and operator tags."""
    tags = Tag.NONE
    found = schemas(name)
    if any(a.alias_info is not None and a.alias_info.is_write and str(a.type) in ("Tensor", "Optional[Tensor]")
           for s in found for a in s.arguments):
        tags |= Tag.INPLACE
    elif found and all(any(r.alias_info is not None and not r.alias_info.is_write for r in s.returns)
                       for s in found if s.returns):
        tags |= Tag.RETURNS_VIEW  # every overload returns a view of an input
    if torch.Tag.nondeterministic_seeded in _operator_tags(name) or any(
            "Generator" in str(a.type) for s in found for a in s.arguments):
        tags |= Tag.RANDOM
    if any(a.name == "device" for s in found for a in s.arguments) and not any(
            "Tensor" in str(a.type) for s in found for a in s.arguments):
        tags |= Tag.CREATION
    return tags


def printed_name(func) -> str | None:
    """A Python expression that names `func` in every trace's namespace ("torch.acosh", "Tensor.acosh_",
    "torch._C._special.special_erfcx"), or None."""
    if isinstance(func, torch._ops.OpOverloadPacket):
        return f"torch.ops.aten.{func.__name__}"
    if isinstance(func, torch._ops.OpOverload):
        return f"torch.ops.aten.{func.overloadpacket.__name__}.{func._overloadname}"
    name = func.__name__
    if isinstance(func, _TENSOR_METHOD_TYPES):
        return f"Tensor.{name}" if getattr(torch.Tensor, name, None) is func else None
    if getattr(torch, name, None) is func:
        return f"torch.{name}"
    if getattr(torch._C._VariableFunctions, name, None) is func:  # shadowed by a Python torch.NAME (stft)
        return f"torch._C._VariableFunctions.{name}"
    module = func.__module__
    obj = torch
    for part in module.split(".")[1:] + [name]:
        obj = getattr(obj, part, None)
    return f"{module}.{name}" if obj is func else None


def _inplace_meta(symbol, args, kwargs):
    try:
        return generic_meta(symbol, args, kwargs)
    except RuntimeError as e:
        # Some CPU kernels resize `self` where the meta kernel insists on broadcasting (Tensor.addbmm_ on
        # a 1-d self): the meta answer is not eager's, so refuse rather than report eager's error wrongly.
        if "doesn't match the broadcast shape" in str(e):
            raise UnsupportedOpError(f"{symbol.name}: its meta kernel rejects this output shape ({e}), but eager's "
                                     "kernel may resize it instead; the compiler cannot tell which here") from e
        raise


def derive(func) -> Symbol | None:
    """A Symbol for `func` from its operator schemas, or None when it does not dispatch to ATen."""
    name = aten_name(func)
    if name is None:
        return None
    printed = printed_name(func)
    if printed is None:
        return None
    tags = tags_for(name)
    if tags & Tag.INPLACE:
        tags &= ~(Tag.RETURNS_VIEW | Tag.CREATION)
    sym = Symbol(printed, func, tags, _inplace_meta if tags & Tag.INPLACE else generic_meta)
    if any(a.name == "device" for s in schemas(name) for a in s.arguments):
        CREATION_FUNCTIONS.add(func)  # meta runs pass device="meta" when no traced tensor is involved
    return sym
