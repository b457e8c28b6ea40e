"""Where a value came from. Every value the interpreter handles carries one of these.

Roots: Argument, Global, Builtin, Closure, Constant, OpaqueResult, Default.
Chains: Attribute and Item (from any provenance). Anything else computed is Computed (with its inputs).
`str(p)` is a readable access path such as `args[0].weight` or `fn.__globals__['G']`.
"""
from __future__ import annotations

from dataclasses import dataclass


class Provenance:
    """Base class. `inputs` are the provenances this one was derived from (empty for roots)."""

    inputs: tuple = ()

    @property
    def is_access_path(self) -> bool:
        """A root, or an attribute/item chain from one: something a guard could re-read on a later call."""
        return not self.inputs

    def roots(self) -> list[Provenance]:
        """The access paths this value depends on (e.g. `args[0].fc1.weight`, a global, a cell, a constant,
        an opaque call's result), in first-use order."""
        seen, out, todo = set(), [], [self]
        while todo:
            p = todo.pop()
            if id(p) in seen:
                continue
            seen.add(id(p))
            if p.is_access_path:
                out.append(p)
            else:
                todo.extend(reversed(p.inputs))
        return out


@dataclass(frozen=True, eq=False)
class Argument(Provenance):
    path: str  # "args[0]", "kwargs['x']", "args[0].weight"

    def __str__(self):
        return self.path


@dataclass(frozen=True, eq=False)
class Global(Provenance):
    name: str
    module: str | None
    function: str  # qualname of the function whose globals were read

    def __str__(self):
        return f"{self.function}.__globals__[{self.name!r}]"


@dataclass(frozen=True, eq=False)
class Builtin(Provenance):
    name: str

    def __str__(self):
        return f"builtins.{self.name}"


@dataclass(frozen=True, eq=False)
class Closure(Provenance):
    name: str
    function: str  # qualname of the function that reads the cell
    internal: bool  # the cell was created by code the interpreter ran (not captured from outside)

    def __str__(self):
        return f"{self.function}.__closure__[{self.name!r}]"


@dataclass(frozen=True, eq=False)
class Constant(Provenance):
    value: object

    def __str__(self):
        return f"constant {self.value!r}"


@dataclass(frozen=True, eq=False)
class Default(Provenance):
    function: str
    name: str

    def __str__(self):
        return f"{self.function}.<default {self.name}>"


@dataclass(frozen=True, eq=False)
class OpaqueResult(Provenance):
    callee: str
    inputs: tuple = ()

    @property
    def is_access_path(self):
        return True  # a root: the interpreter cannot see what the native code depends on

    def __str__(self):
        return f"<result of opaque call {self.callee}()>"


@dataclass(frozen=True, eq=False)
class Attribute(Provenance):
    base: Provenance
    name: str

    @property
    def is_access_path(self):
        return self.base.is_access_path

    @property
    def inputs(self):
        return (self.base,)

    def __str__(self):
        return f"{self.base}.{self.name}"


@dataclass(frozen=True, eq=False)
class Item(Provenance):
    base: Provenance
    key: object

    @property
    def is_access_path(self):
        return self.base.is_access_path

    @property
    def inputs(self):
        return (self.base,)

    def __str__(self):
        return f"{self.base}[{self.key!r}]"


@dataclass(frozen=True, eq=False)
class Computed(Provenance):
    operation: str  # "binary +", "call f", "build_list", ...
    inputs: tuple = ()

    def __str__(self):
        return f"<{self.operation}>"


UNKNOWN = Computed("unknown")


def describe_callee(fn) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__qualname__
    module = getattr(fn, "__module__", None)
    return f"{module}.{name}" if module and module != "builtins" else str(name)
