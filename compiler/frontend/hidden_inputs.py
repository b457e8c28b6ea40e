"""Hidden inputs found before tracing, from code alone: globals and closure cells named by
the jitted function's code (and, transitively, by the user functions it names), and the plain attributes
of every submodule. The prologue guards them (values by equality, objects by identity), so rebinding one
re-traces instead of returning a stale result (seed 132).

This is a static over-approximation: it may guard names the run never reads (harmless: a rebinding only
costs a re-trace), and it misses what only execution reveals (globals read by methods reached through
attributes); the interpreting front end adds guards for every global and cell it saw read.
"""
from __future__ import annotations

import functools
import os
import sys
import sysconfig
import types
from dataclasses import dataclass

import torch

_SIMPLE = (bool, int, float, complex, str, type(None), torch.dtype, torch.device)


@dataclass(frozen=True)
class HiddenValue:
    kind: str  # "global", "cell", "attribute" (of a module) or "child" (a submodule slot)
    holder: object  # the globals dict, the cell, or the module
    key: str  # global name, free variable name, attribute name
    value: object
    where: str  # human-readable origin, e.g. "fn.__globals__['SCALE']"
    path: tuple = ()  # then into the value: ("item", key) / ("attr", name) steps
    check: str = ""  # "value", "identity", "list", "dict" (type + length/keys); set by expand()
    shape: object = None  # for "list"/"dict": the length/keys when expanded (the container may change later)


_MAX_ITEMS = 64  # containers/objects larger than this are guarded by identity only
_MAX_DEPTH = 3


def _plain_object(value) -> bool:
    """A user object whose attributes are data (a config or settings object), not code or torch state."""
    t = type(value)
    mod = getattr(t, "__module__", "") or ""
    return (hasattr(value, "__dict__") and not isinstance(value, (type, types.FunctionType, types.MethodType,
                                                                   types.ModuleType, torch.nn.Module, torch.Tensor))
            and not mod.startswith(("torch", "builtins", "compiler")) and len(vars(value)) <= _MAX_ITEMS)


def expand(h: HiddenValue, depth: int = 0) -> list:
    """Guards for one hidden value: by value when immutable, else its container shape and each item
    (lists, dicts, plain objects' attributes - a global config edited in place re-traces), else identity."""
    from dataclasses import replace

    v = h.value
    if by_value(v):
        return [replace(h, check="value")]
    if depth < _MAX_DEPTH and type(v) in (list, dict) and len(v) <= _MAX_ITEMS and \
            (type(v) is list or all(type(k) in (str, int) for k in v)):
        out = [replace(h, check=type(v).__name__, shape=len(v) if type(v) is list else tuple(v))]
        items = enumerate(v) if type(v) is list else v.items()
        for k, item in items:
            out += expand(replace(h, value=item, path=h.path + (("item", k),), where=f"{h.where}[{k!r}]"), depth + 1)
        return out
    if depth < _MAX_DEPTH and _plain_object(v):
        out = [replace(h, check="identity")]
        for name, item in vars(v).items():
            if not name.startswith("_"):
                out += expand(replace(h, value=item, path=h.path + (("attr", name),), where=f"{h.where}.{name}"),
                              depth + 1)
        return out
    return [replace(h, check="identity")]


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
    return [g for h in found for g in (expand(h) if h.kind != "child" else [replace_check(h, "identity")])]


def replace_check(h: HiddenValue, check: str) -> HiddenValue:
    from dataclasses import replace

    return replace(h, check=check)
