"""Where a value came from. Every value the interpreter handles carries one of these.

Access paths (re-readable on a later call): Argument, Global, Builtin, Closure, Constant, Default, and
Attribute / Item chains from them; OpaqueResult (a native call's result) is a root that cannot be re-read.
Anything else is Computed: an operation plus the access paths it depends on (flattened, so a loop
accumulator does not grow a chain). `str(p)` is readable, e.g. `args[0].weight`, `fn.__globals__['G']`.
"""
from __future__ import annotations


class Provenance:
    """Base class. `inputs` are the provenances this one was derived from (empty for roots)."""

    __slots__ = ()
    inputs: tuple = ()
    is_access_path = True  # a root, or an attribute/item chain from one

    def roots(self) -> list[Provenance]:
        """The access paths this value depends on (e.g. `args[0].fc1.weight`, a global, a cell, a constant,
        an opaque call's result), in first-use order."""
        if self.is_access_path:
            return [self]
        return list(self.inputs)

    def _fields(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def __repr__(self):
        inner = ", ".join(f"{k}={v!r}" for k, v in self._fields().items())
        return f"{type(self).__name__}({inner})"


class Argument(Provenance):
    __slots__ = ("path",)

    def __init__(self, path: str):
        self.path = path  # "args[0]", "kwargs['x']"

    def __str__(self):
        return self.path


class Global(Provenance):
    __slots__ = ("name", "module", "function")

    def __init__(self, name: str, module: str | None, function: str):
        self.name = name
        self.module = module
        self.function = function  # qualname of the function whose globals were read

    def __str__(self):
        return f"{self.function}.__globals__[{self.name!r}]"


class Builtin(Provenance):
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __str__(self):
        return f"builtins.{self.name}"


class Closure(Provenance):
    __slots__ = ("name", "function", "internal")

    def __init__(self, name: str, function: str, internal: bool):
        self.name = name
        self.function = function  # qualname of the function that reads the cell
        self.internal = internal  # the cell was created by code the interpreter ran (not captured from outside)

    def __str__(self):
        return f"{self.function}.__closure__[{self.name!r}]"


class Constant(Provenance):
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __str__(self):
        return f"constant {self.value!r}"


class Default(Provenance):
    __slots__ = ("function", "name")

    def __init__(self, function: str, name: str):
        self.function = function
        self.name = name

    def __str__(self):
        return f"{self.function}.<default {self.name}>"


class OpaqueResult(Provenance):
    """A native call's result: a root, since the interpreter cannot see what the native code read."""

    __slots__ = ("callee", "arguments")

    def __init__(self, callee: str, arguments: tuple = ()):
        self.callee = callee
        self.arguments = _flatten(arguments)  # access paths of the call's arguments (for reference only)

    def __str__(self):
        return f"<result of opaque call {self.callee}()>"


class Attribute(Provenance):
    __slots__ = ("base", "name", "is_access_path", "inputs")

    def __init__(self, base: Provenance, name: str):
        base = base if base is not None else UNKNOWN
        self.base = base
        self.name = name
        self.is_access_path = base.is_access_path
        self.inputs = (base,) if base.is_access_path else base.inputs

    def __str__(self):
        return f"{self.base}.{self.name}"


class Item(Provenance):
    __slots__ = ("base", "key", "is_access_path", "inputs")

    def __init__(self, base: Provenance, key):
        base = base if base is not None else UNKNOWN
        self.base = base
        self.key = key
        self.is_access_path = base.is_access_path
        self.inputs = (base,) if base.is_access_path else base.inputs

    def __str__(self):
        return f"{self.base}[{self.key!r}]"


def _flatten(provs) -> tuple:
    if not provs:
        return ()
    if len(provs) == 1:
        p = provs[0]
        if p is None:
            return ()
        return (p,) if p.is_access_path else p.inputs
    if len(provs) == 2:  # the common case (binary operators): avoid the dict
        a, b = provs
        if a is not None and b is not None:
            a = (a,) if a.is_access_path else a.inputs
            b = (b,) if b.is_access_path else b.inputs
            if not b or a == b:
                return a
            if not a:
                return b
            if len(a) + len(b) <= 2 or not any(q in a for q in b):
                return a + b
    seen = {}
    for p in provs:
        if p is None:
            continue
        if p.is_access_path:
            seen[id(p)] = p
        else:
            for q in p.inputs:
                seen[id(q)] = q
    return tuple(seen.values())


class Computed(Provenance):
    """Result of an operation; `inputs` are the access paths it depends on (deduplicated, flat)."""

    __slots__ = ("operation", "inputs")
    is_access_path = False

    def __init__(self, operation: str, inputs: tuple = ()):
        self.operation = operation  # "+", "call f", "list", ...
        self.inputs = _flatten(inputs)

    def __str__(self):
        return f"<{self.operation}>"


UNKNOWN = Computed("unknown")


def describe_callee(fn) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__qualname__
    module = getattr(fn, "__module__", None)
    return f"{module}.{name}" if module and module != "builtins" else str(name)
