"""Hidden inputs found before tracing, from code alone: globals and closure cells named by
the jitted function's code (and, transitively, by the user functions it names), and the plain attributes
of every submodule. The prologue guards them (values by equality, objects by identity), so rebinding one
re-traces instead of returning a stale result (seed 132).

This is a static over-approximation: it may guard names the run never reads (harmless: a rebinding only
costs a re-trace), and it misses what only execution reveals (globals read by methods reached through
attributes); the interpreting front end adds guards for every global and cell it saw read.
"""
from __future__ import annotations

import collections
import functools
import os
import sys
import sysconfig
import types
from dataclasses import dataclass

import torch

from ..core.proxies import NumberProxy, Proxy, Symbolic

_SIMPLE = (bool, int, float, complex, str, type(None), torch.dtype, torch.device)


@dataclass(frozen=True)
class HiddenValue:
    kind: str  # "global", "cell", "attribute" (of a module), "child" (a submodule slot), "environ"
    # (os.environ[key], None where unset) or "contextvar" (its value, UNSET where it has none)
    holder: object  # the globals dict, the cell, or the module
    key: str  # global name, free variable name, attribute name
    value: object
    where: str  # human-readable origin, e.g. "fn.__globals__['SCALE']"
    path: tuple = ()  # then into the value: ("item", key) / ("attr", name) steps
    # "value", "identity", "list"/"tuple"/"dict" (type + length/keys), "set" (type + items: by value, or by
    # identity for items that are not plain values); set by expand()
    check: str = ""
    shape: object = None  # "list"/"tuple": the length; "dict": (type, keys); "set": (type, items) when expanded


class _Unset:
    """What a ContextVar with no value reads as in a guard (`var.get(UNSET)`)."""

    def __repr__(self):
        return "UNSET"


UNSET = _Unset()

_MAX_ITEMS = 64  # containers/objects larger than this are guarded by identity only
_MAX_DEPTH = 3


def _plain_object(value) -> bool:
    """A user object whose attributes are data (a config or settings object), not code or torch state."""
    t = type(value)
    mod = getattr(t, "__module__", "") or ""
    if isinstance(value, (Proxy, NumberProxy, Symbolic)):
        return False
    return (hasattr(value, "__dict__") and not isinstance(value, (type, types.FunctionType, types.MethodType,
                                                                   types.ModuleType, torch.nn.Module, torch.Tensor))
            and not mod.startswith(("torch", "builtins", "compiler")) and len(vars(value)) <= _MAX_ITEMS)


_DICTS = (dict, collections.OrderedDict, collections.defaultdict)


def expand(h: HiddenValue, depth: int = 0) -> list:
    """Guards for one hidden value: by value when immutable, else its container shape and each item
    (lists, tuples, dicts, sets, plain objects' attributes - a global config edited in place re-traces;
    a function's defaults and attributes; an nn.Module's attributes, flags, parameters and the order of its
    parameters, buffers and submodules), else identity."""
    from dataclasses import replace

    v = h.value
    if isinstance(v, (Proxy, NumberProxy, Symbolic)):
        return []  # a value the call itself made and stored there (a nonlocal written before it is read)
    if by_value(v):
        return [replace(h, check="value")]
    if type(v) in (set, frozenset) and len(v) <= _MAX_ITEMS:  # (a set that grows re-traces)
        return [replace(h, check="set", shape=(type(v), frozenset(v) if all(by_value(i) for i in v)
                                               else tuple(v)))]
    if depth < _MAX_DEPTH and (type(v) in (list, tuple) or type(v) in _DICTS and all(type(k) in (str, int) for k in v)) \
            and len(v) <= _MAX_ITEMS:
        kind = "dict" if type(v) in _DICTS else type(v).__name__
        out = [replace(h, check=kind, shape=(type(v), tuple(v)) if kind == "dict" else len(v))]
        items = v.items() if kind == "dict" else enumerate(v)
        for k, item in items:
            out += expand(replace(h, value=item, path=h.path + (("item", k),), where=f"{h.where}[{k!r}]"), depth + 1)
        return out
    if depth < _MAX_DEPTH and isinstance(v, types.FunctionType) and not _is_library(v):
        return _expand_function(h, depth)
    if depth < _MAX_DEPTH and isinstance(v, torch.nn.Module):
        return _expand_module(h, depth)
    if depth < _MAX_DEPTH and _plain_object(v):
        # its identity, the names of its attributes (getattr(cfg, "flag", False) of one set later re-traces), each
        # attribute (read from the object itself once its identity is checked: cheaper than the path)
        out = [replace(h, check="identity"), replace(_of(v, "__dict__", vars(v), h.where), check="dict",
                                                     shape=(dict, tuple(vars(v))))]
        for name, item in vars(v).items():
            if not name.startswith("_"):
                out += expand(_of(v, name, item, h.where), depth + 1)
        return out
    return [replace(h, check="identity")]


def _of(obj, name: str, value, where: str) -> HiddenValue:
    """Attribute `name` of an object whose identity an earlier guard checked: read from the object itself."""
    return HiddenValue("attribute", obj, name, value, f"{where}.{name}")


def _attr(h: HiddenValue, name: str, value) -> HiddenValue:
    from dataclasses import replace

    return replace(h, value=value, path=h.path + (("attr", name),), where=f"{h.where}.{name}", check="", shape=None)


def _item(h: HiddenValue, key, value) -> HiddenValue:
    from dataclasses import replace

    return replace(h, value=value, path=h.path + (("item", key),), where=f"{h.where}[{key!r}]", check="", shape=None)


def _expand_function(h: HiddenValue, depth: int) -> list:
    """A function the code calls or reads: its identity, and what a call of it reads besides its code and
    closure (found by the static walk): its defaults (`g.__defaults__ = (...)` re-traces; a default tensor
    changed in place is a captured tensor), its code, and its attributes (`g.pred = False`)."""
    from dataclasses import replace

    f = h.value
    out = [replace(h, check="identity"), replace(_of(f, "__code__", f.__code__, h.where), check="identity")]
    out += expand(_of(f, "__defaults__", f.__defaults__, h.where), depth + 1)
    out += expand(_of(f, "__kwdefaults__", f.__kwdefaults__, h.where), depth + 1)
    out += expand(_of(f, "__dict__", vars(f), h.where), depth + 1)
    return out


def _expand_module(h: HiddenValue, depth: int) -> list:
    """An nn.Module the code reaches as a global, a closure variable or inside a container (not the jitted
    module, whose state is inputs): for it and each submodule, its `training` flag, the names and order of its
    attributes, parameters, buffers and submodules (`parameters()` follows that order; an instance-level
    `forward` is an attribute), each parameter's and buffer's identity (their metadata is guarded where the
    trace captures them), and its plain attributes (`self.multiplier = 11`)."""
    from dataclasses import replace

    # (each submodule's identity is checked where its parent holds it; what follows reads the module itself)
    out = [replace(h, check="identity")]
    pending = [(h.where, h.value)]
    seen = set()
    while pending:
        where, sub = pending.pop()
        if id(sub) in seen:
            continue
        seen.add(id(sub))
        d = vars(sub)
        out.append(replace(_of(sub, "__dict__", d, where), check="names", shape=len(d)))  # (a `forward` set adds one)
        out.append(replace(_of(sub, "training", sub.training, where), check="value"))
        for store in ("_parameters", "_buffers", "_modules"):
            held = d.get(store)
            if type(held) is not dict:
                continue
            holder = _of(sub, store, held, where)
            out.append(replace(holder, check="dict", shape=(dict, tuple(held))))
            for name, item in held.items():
                out.append(replace(_item(holder, name, item), check="identity"))
                if store == "_modules" and item is not None:
                    pending.append((f"{where}.{name}", item))
        for name, value in d.items():
            if not name.startswith("_") and name != "training":
                out += expand(_of(sub, name, value, where), depth + 1)
    return out


def by_value(value) -> bool:
    """Guard by value (immutable, cheap to compare) or else by identity."""
    if type(value) in _SIMPLE:
        return True
    return type(value) is tuple and all(by_value(v) for v in value)


def _module_attributes(module: types.ModuleType, code: types.CodeType, found: list) -> None:
    """The module binding itself is left alone; attributes of the user's own modules that this code names
    (config.SCALE) are guarded like globals."""
    if _library_module(module):
        return
    names = vars(module)
    for attr in code.co_names:
        if attr in names and not isinstance(names[attr], types.ModuleType):
            found.append(HiddenValue("global", names, attr, names[attr], f"{module.__name__}.{attr}"))


def _library_module(m: types.ModuleType) -> bool:
    root = m.__name__.split(".")[0]
    return root in sys.stdlib_module_names or root in ("torch", "compiler", "builtins") or \
        library_file(getattr(m, "__file__", None) or "")


_COMPILER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # compiler/
_STDLIB = sysconfig.get_paths().get("stdlib") or "\0"


@functools.lru_cache(maxsize=4096)
def library_file(filename: str) -> bool:
    """Library code (the standard library, installed packages, the compiler): not the user's."""
    if filename.startswith("<"):
        return filename.startswith("<frozen")
    return filename.startswith((_COMPILER_DIR, _STDLIB)) or "site-packages" in filename or \
        "dist-packages" in filename


def _is_library(fn) -> bool:
    mod = getattr(fn, "__module__", "") or ""
    return mod == "torch" or mod.startswith(("torch.", "compiler.", "builtins"))


def _visit_code(code: types.CodeType, globals_: dict, closure, found: list, seen: set, label: str,
                slots: list | None = None) -> None:
    if id(code) in seen:
        return
    seen[id(code)] = (code, label)
    for name in code.co_names:
        if slots is not None:
            slots.append((globals_, name))
        if name in globals_:
            value = globals_[name]
            if isinstance(value, types.ModuleType):
                _module_attributes(value, code, found)
                continue
            found.append(HiddenValue("global", globals_, name, value, f"{label}.__globals__[{name!r}]"))
            _visit_callable(value, found, seen, name, slots)
    for name, cell in zip(code.co_freevars, closure or ()):
        if slots is not None:
            slots.append((cell, name))
        try:
            value = cell.cell_contents
        except ValueError:  # empty cell: the traced run could not have read it
            continue
        if isinstance(value, types.ModuleType):
            _module_attributes(value, code, found)
            continue
        found.append(HiddenValue("cell", cell, name, value, f"{label} closure cell {name!r}"))
        _visit_callable(value, found, seen, name, slots)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):  # nested function, lambda or comprehension
            _visit_code(const, globals_, None, found, seen, label, slots)


def _visit_callable(value, found: list, seen: set, label: str, slots: list | None = None) -> None:
    if isinstance(value, types.MethodType):
        value = value.__func__
    if isinstance(value, types.FunctionType) and not _is_library(value):
        _visit_code(value.__code__, value.__globals__, value.__closure__, found, seen, label, slots)


_MISSING = object()


def write_slot(holder, name: str, value, absent=_MISSING) -> None:
    """Set a global (``holder``: the globals dict) or a cell; ``value is absent`` removes it."""
    if isinstance(holder, dict):
        if value is absent:
            holder.pop(name, None)
        else:
            holder[name] = value
    elif value is absent:
        try:
            del holder.cell_contents
        except ValueError:
            pass
    else:
        holder.cell_contents = value


class StateSnapshot:
    """What the traced function can write outside its arguments: global names and closure cells its code
    names, and submodule attributes. After tracing, a traced value (proxy) found there was leaked by the
    function (`global cache; cache = x * 2`, `self.last = h`): it is put back and the trace refused."""

    def __init__(self, fn, module=None):
        self.slots: list = []
        _visit_callable(fn if module is None else type(module).forward, [], {}, "fn", self.slots)
        self.values = [(holder, name, self._read(holder, name)) for holder, name in self.slots]
        self.modules = [(sub, dict(vars(sub))) for sub in module.modules()] if module is not None else []

    @staticmethod
    def _read(holder, name):
        if isinstance(holder, dict):
            return holder.get(name, _MISSING)
        try:
            return holder.cell_contents
        except ValueError:
            return _MISSING

    def restore_leaks(self, is_traced) -> list[str]:
        """Put back every slot that now holds a traced value; returns their descriptions."""
        leaks = []
        for holder, name, before in self.values:
            now = self._read(holder, name)
            if now is not before and now is not _MISSING and is_traced(now):
                write_slot(holder, name, before)
                leaks.append(f"{'global' if isinstance(holder, dict) else 'closure variable'} {name!r}")
        for sub, before in self.modules:
            d = vars(sub)
            for name, now in list(d.items()):
                if before.get(name, _MISSING) is not now and is_traced(now):
                    if name in before:
                        d[name] = before[name]
                    else:
                        del d[name]
                    leaks.append(f"module attribute {type(sub).__qualname__}.{name}")
        return leaks


def user_codes(fn, module: torch.nn.Module | None = None) -> list:
    """(code object, label) of the user functions the jitted code can reach (library code excluded)."""
    seen: dict = {}
    if module is not None:
        for sub in module.modules():
            forward = type(sub).forward
            if not _is_library(forward):
                _visit_callable(forward, [], seen, f"{type(sub).__qualname__}.forward")
    else:
        _visit_callable(fn, [], seen, getattr(fn, "__qualname__", "fn"))
    return list(seen.values())


def hidden_values(fn, module: torch.nn.Module | None = None) -> list[HiddenValue]:
    found: list[HiddenValue] = []
    seen: dict = {}
    if module is not None:
        for prefix, sub in module.named_modules():
            where = f"module{'.' + prefix if prefix else ''}"
            # the names and order of its attributes (a `forward` set on the instance), parameters, buffers and
            # submodules (parameters() and children() follow that order)
            for store in ("__dict__", "_parameters", "_buffers", "_modules"):
                d = vars(sub) if store == "__dict__" else getattr(sub, store)
                found.append(HiddenValue("attribute", sub, store, d, f"{where}.{store}", check="dict",
                                         shape=(dict, tuple(d))))
            for name, child in sub._modules.items():  # model.lin = other: the trace used the old one
                found.append(HiddenValue("child", sub, name, child, f"module.{prefix + '.' if prefix else ''}{name}"))
            for name, value in vars(sub).items():
                if name.startswith("_") or name == "training":  # nn.Module internals; training is guarded
                    continue
                found.append(HiddenValue("attribute", sub, name, value, f"module.{prefix + '.' if prefix else ''}{name}"))
            forward = type(sub).forward
            if not _is_library(forward):
                _visit_callable(forward, found, seen, f"{type(sub).__qualname__}.forward")
    else:
        if isinstance(fn, types.MethodType) and _plain_object(fn.__self__):
            # jit(obj.method): the method reads self's attributes; guard them like a global object's
            for name, value in vars(fn.__self__).items():
                if not name.startswith("_"):
                    found.append(HiddenValue("attribute", fn.__self__, name, value, f"self.{name}"))
        _visit_callable(fn, found, seen, getattr(fn, "__qualname__", "fn"))
    return [g for h in found for g in (expand(h) if h.kind != "child" and not h.check else
                                       [replace_check(h, h.check or "identity")])]


def replace_check(h: HiddenValue, check: str) -> HiddenValue:
    from dataclasses import replace

    return replace(h, check=check)
