"""Arguments that are objects holding tensors (a transformers DynamicCache passed back for the next decode step):
inputs by structure, not by identity.

Such an object is guarded by its class and the names of its attributes; the tensors it holds (in attributes,
lists, tuples, dicts, other such objects) are inputs fetched from it on every call, numbers and strings are
guarded values (symbolic under cache="symbolic values"), anything else keeps its identity guard. The object
itself is an input of the computation (an OpaqueProxy), so a trace made for one cache serves another of the same
structure, and a returned one is the caller's. While tracing, its attributes hold the proxies; after tracing they
are put back, and each attribute the call reassigned (`self.keys = torch.cat([self.keys, k], dim=-2)`) becomes
a store of the computed value into that call's object, at the end of the trace.
"""
from __future__ import annotations

import contextlib
import sys
import types

import torch

from ..core.proxies import OpaqueProxy

_DEPTH = 4
_PLAIN = (bool, int, float, complex, str, type(None), torch.dtype, torch.device, torch.Size)


def is_state_object(x, depth: int = 0) -> bool:
    """An instance of a library or user class (not a module, function, context manager or callable) whose
    attributes are tensors, plain values, containers of them and other such objects, with a tensor among them."""
    return _kind(x, depth) == "tensors"


def _kind(x, depth: int) -> str | None:
    """"tensors" (holds one), "plain" (holds none), None (something else: not a state object)."""
    if type(x) in (torch.Tensor, torch.nn.Parameter):
        return "tensors"
    if isinstance(x, _PLAIN) or isinstance(x, type):
        return "plain"
    if depth > _DEPTH:
        return None
    if type(x) in (list, tuple) or type(x) is dict and all(type(k) is str for k in x):
        items = list(x.values() if type(x) is dict else x)
        if type(x) is not tuple and any(type(v) in (torch.Tensor, torch.nn.Parameter) for v in items):
            # a list or dict of tensors held by an object is what calls append to (a log, a history): its
            # object stays an input by identity, whose in-place changes the escapes journal keeps; caches hold
            # their tensors in attributes they reassign (DynamicCache's layers[i].keys)
            return None
        kinds = [_kind(v, depth + 1) for v in items]
        return None if None in kinds else "tensors" if "tensors" in kinds else "plain"
    t = type(x)
    mod = (getattr(t, "__module__", "") or "").split(".")[0]
    holder = getattr(x, "__dict__", None)
    if not isinstance(holder, dict) or mod in ("torch", "builtins", "compiler") or mod in sys.stdlib_module_names \
            or isinstance(x, (torch.nn.Module, torch.Tensor, types.FunctionType, types.MethodType,
                              contextlib.AbstractContextManager)) \
            or callable(x) or hasattr(t, "__enter__") or "__slots__" in t.__dict__ \
            or isinstance(x, (tuple, list, dict, set, frozenset)):  # (a container subclass: ModelOutput)
        return None
    kinds = [_kind(v, depth + 1) for v in holder.values()]
    return None if None in kinds else "tensors" if "tensors" in kinds else "plain"


class InputAttr:
    """An attribute of an argument object (`proxy` in the computation) as the epilogue's store slot."""

    is_global, kind = False, "input attribute"

    def __init__(self, proxy: OpaqueProxy, name: str):
        self.proxy, self.key, self.label = proxy, name, f"{proxy.origin}.{name}"
        self.id = (id(proxy), name)


def print_store(slot: InputAttr, value_expr: str | None) -> list[str]:
    """value_expr None: the attribute is deleted."""
    if value_expr is None:
        return [f"{slot.proxy.name}.__dict__.pop({slot.key!r}, None)  # {slot.label}: deleted"]
    return [f"{slot.proxy.name}.__dict__[{slot.key!r}] = {value_expr}  # {slot.label}"]


class StateObjects:
    """The state objects among one call's arguments: their proxies, and their attributes as tracing found them."""

    def __init__(self):
        self.objects: list = []  # (object, its OpaqueProxy, its attributes before, as the trace sees them)

    def add(self, obj, proxy: OpaqueProxy, before: dict, traced: dict) -> None:
        self.objects.append((obj, proxy, before, traced))

    def proxies(self) -> dict:
        return {id(obj): proxy for obj, proxy, _, _ in self.objects}

    def put_back(self, rebuild, replayable, keep: bool = False) -> tuple[list, list]:
        """Each object's attributes as they were (in their order); (the stores of what the call assigned or
        deleted, why the trace is single-use: a value a cached trace cannot make again, stored as this call's
        object, or left as written where it holds traced values). keep: the user's program raised, and eager
        kept what it did before: only what the call did not write is put back (escapes.py puts real values in
        place of traced ones)."""
        from ..core.context import MISSING
        from ..core import tree as pytree
        from ..core.proxies import Proxy

        stores, single_use = [], []
        for obj, proxy, before, traced in self.objects:
            d = vars(obj)
            after = dict(d)
            kept = {}
            if keep:
                d.update({name: before[name] for name, value in after.items()
                          if name in traced and value is traced[name]})
                continue
            stores += [(InputAttr(proxy, name), MISSING) for name in traced if name not in after]  # (deleted)
            for name, value in after.items():
                if name in traced and value is traced[name]:
                    continue  # (not written)
                new = rebuild(value) if rebuild is not None else value
                if new is None or not replayable(new):
                    single_use.append(f"stores a {type(value).__name__} in {proxy.origin}.{name}, which a cached "
                                      "trace cannot make again")
                    if any(isinstance(v, Proxy) for v in pytree.tree_leaves(value)):
                        kept[name] = value  # (left as written: escapes.py puts the real values in)
                        continue
                    new = value  # (this call's object, as a constant of its single-use trace)
                stores.append((InputAttr(proxy, name), new))
            d.clear()
            d.update(before)
            d.update(kept)
        return stores, single_use
