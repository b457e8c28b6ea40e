"""Which attributes of the jitted module tree the call read before it wrote them.

A forward that stores a value on its module without reading the slot first (`self.cache = DynamicCache(...)`,
`self.last = h`) does not depend on what the slot held before the call: the prologue need not guard it, and
the trace stays usable on the next call, which finds there what the trace's own store left (a new object, a
new tensor). A slot read first (`self.calls += 1`, `if self.cache is None: ...`, `hasattr(self, "cache")`)
keeps its guards. Reads are seen where the interpreter makes them: attribute loads (`self.x`, `getattr`,
`super()`), the module's `__dict__` from user code (any slot), and native calls handed the module (`hasattr`,
`vars`, `dir`, ...: any slot, except the few that read no attribute).
"""
from __future__ import annotations

import builtins
import os

import torch

from ..interpreter import events as ev

_TORCH_MODULE_FILE = os.path.normpath(torch.nn.modules.module.__file__)  # nn.Module's own bookkeeping
_READS_NOTHING = {id(f): f for f in (isinstance, issubclass, id, type, hash, callable, setattr, delattr,
                                     object.__setattr__, object.__delattr__)}
_READS_EVERYTHING = {id(f): f for f in (builtins.vars, builtins.dir)}  # (the interpreter's own lookasides)
ANY = None  # the name recorded for a read of every slot


class AttributeReads:
    """Interpreter observer and hooks: the (module id, attribute name) slots read before the call wrote them."""

    def __init__(self, own_modules: set):
        self.own = own_modules  # ids of the jitted module's tree
        self.written: set = set()
        self.read_first: set = set()  # (id, name); (id, ANY): the call may have read any slot of that module

    def __call__(self, event) -> None:
        if event.kind == ev.ATTRIBUTE_WRITE and id(event.value) in self.own:
            self.written.add((id(event.value), event.name))

    def read_before_write(self, module, name: str) -> bool:
        return (id(module), name) in self.read_first or (id(module), ANY) in self.read_first

    def _read(self, obj, name) -> None:
        key = (id(obj), name)
        if key not in self.written:
            self.read_first.add(key)

    def install(self, interp) -> None:
        """Wrap the interpreter's attribute loads and calls (on this instance only)."""
        if not self.own:
            return
        load_attr, call_native, call = interp.load_attr, interp.call_native, interp.call
        own = self.own

        def loading(frame, obj, name, prov):
            if id(obj) in own:
                if name != "__dict__":
                    self._read(obj, name)
                elif frame is None or os.path.normpath(frame.code.co_filename) != _TORCH_MODULE_FILE:
                    self._read(obj, ANY)
            return load_attr(frame, obj, name, prov)

        def calling_native(frame, fn, args, kwargs, provs, kwprovs):
            if _READS_NOTHING.get(id(fn)) is not fn:
                self._handed(args, kwargs)
            return call_native(frame, fn, args, kwargs, provs, kwprovs)

        def calling(frame, fn, args, kwargs, provs, kwprovs):
            if _READS_EVERYTHING.get(id(fn)) is fn:
                self._handed(args, kwargs)
            return call(frame, fn, args, kwargs, provs, kwprovs)

        interp.load_attr, interp.call_native, interp.call = loading, calling_native, calling

    def _handed(self, args, kwargs) -> None:
        for value in (*args, *kwargs.values()):
            if id(value) in self.own:
                self._read(value, ANY)
