"""Symbols (ops) and bound symbols (one call of an op in a trace)."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable

from . import tree as pytree
from .context import current_state
from .errors import CompilerError
from .proxies import Symbolic, TensorProxy


class Tag(enum.Flag):
    NONE = 0
    PRIM = enum.auto()  # a member of the small primitive set
    INPLACE = enum.auto()  # mutates its first tensor argument (or `out=`): never removed or reordered
    RETURNS_VIEW = enum.auto()  # always returns a view of an input
    MAY_RETURN_VIEW = enum.auto()  # view or copy depending on layout (reshape, flatten, contiguous, to...)
    RANDOM = enum.auto()  # consumes RNG state: never removed or merged
    CREATION = enum.auto()  # makes a fresh tensor from nothing (zeros, empty...): never merged
    EFFECT = enum.auto()  # changes global state (grad mode) or only checks (prologue guards): kept in order


# Side effects that forbid DCE/CSE from touching a bound symbol.
EFFECTFUL = Tag.INPLACE | Tag.RANDOM | Tag.EFFECT


@dataclass(eq=False)
class Symbol:
    """An op. `name` is the Python expression the printed trace uses to call it ("torch.add", "F.linear",
    "Tensor.add_", "prims.exp"); `fn` is the callable that eager PyTorch runs for it."""

    name: str
    fn: Callable | None
    tags: Tag = Tag.NONE
    meta: Callable | None = None  # (symbol, args, kwargs) -> outputs (proxies); set by torchlang/prims
    decomposition: Callable | None = None  # (*args, **kwargs) -> outputs, written with prims
    printer: Callable | None = None  # (bsym, trace) -> lines of Python, for symbols that print inline code
    inplace_arg: int | None = None  # F.relu(x, inplace=True) and the like: index of the `inplace` argument

    def __call__(self, *args, **kwargs):
        state = current_state()  # (the tracing state records the call: compiler/torchlang/recording.py)
        if state is None:
            raise CompilerError(f"{self.name} called outside of tracing")
        return state.record(self, args, kwargs)

    def __repr__(self):
        return f"Symbol({self.name})"


@dataclass(eq=False)
class BoundSymbol:
    symbol: Symbol
    args: tuple
    kwargs: dict
    output: Any
    subsymbols: list = field(default_factory=list)
    location: Any = None  # compiler.core.source.SourceLocation of the user's line
    impl: Any = None  # set by the executor pass: (executor, printed callable expression)
    unchecked: bool = False  # its decomposition failed: the meta kernel may have let pass what eager refuses
    # nothing needs its result, but eager may raise there: the fused path keeps it out of regions (whose
    # compiled code would drop it, or not raise), so the torch executor runs it
    kept_to_raise: bool = False

    @property
    def tags(self) -> Tag:
        return self.symbol.tags

    def flat_args(self) -> list:
        return pytree.tree_leaves((self.args, self.kwargs))

    def tensor_args(self) -> list[TensorProxy]:
        return [a for a in self.flat_args() if isinstance(a, TensorProxy)]

    def flat_outputs(self) -> list:
        return pytree.tree_leaves(self.output)

    def tensor_outputs(self) -> list[TensorProxy]:
        return [o for o in self.flat_outputs() if isinstance(o, TensorProxy)]

    def key(self):
        """Hashable identity of the computation (for CSE): symbol + args, proxies by name."""

        def k(x):
            if isinstance(x, (TensorProxy, Symbolic)):  # (symbolic numbers: by name, never hashed)
                return ("proxy", x.name)
            if isinstance(x, (list, tuple)):
                return (type(x).__name__, tuple(k(i) for i in x))
            if isinstance(x, dict):
                return ("dict", tuple((kk, k(v)) for kk, v in x.items()))
            if isinstance(x, float) and x != x:
                return ("nan",)
            try:
                hash(x)
                return (type(x).__name__, x)
            except TypeError:
                return ("id", id(x))

        return (id(self.symbol), k(self.args), k(self.kwargs))
