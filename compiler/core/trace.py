"""Traces: a program of bound symbols that prints as readable Python and executes as that Python.

Recording one (the tracing state, `record_call`) is compiler/torchlang/recording.py."""
from __future__ import annotations

import collections
import math
import os
from typing import Any

import torch

from . import tree as pytree
from .proxies import FloatProxy, IntegerProxy, OpaqueProxy, Symbolic, TensorProxy
from .symbols import BoundSymbol

# Names every printed trace may use; a trace's own constants are added per trace.
BASE_CTX: dict[str, Any] = {"torch": torch, "F": torch.nn.functional, "Tensor": torch.Tensor, "inf": math.inf,
                            "nan": math.nan, "math": math}


def register_ctx_name(name: str, obj) -> None:
    """Modules of symbols (e.g. `prims`) make their printed names resolvable here."""
    BASE_CTX[name] = obj


class SameObject:
    """An object in a trace's output that the computation returns as it is (the function returned an object
    it did not create, e.g. a global list): printed as that object, so every call returns it by identity."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __repr__(self):
        return f"SameObject({type(self.obj).__qualname__} at {id(self.obj):#x})"


class Rebuilt(pytree.RebuiltBase):
    """An object the call made and returned (a transformers DynamicCache, a user class instance): every call
    makes a new one of the same class and attribute structure, its tensors filled from that call's results,
    as eager's call would have made it. `key` names it in the printed trace (`_o0`), so one object reached twice
    in the output (a ModelOutput's field and item) is one object; copies made by tree_map keep the key."""

    __slots__ = ("cls", "attrs", "key")

    def __init__(self, cls, attrs: dict, key: int):
        self.cls, self.attrs, self.key = cls, attrs, key

    def __repr__(self):
        return f"Rebuilt({self.cls.__qualname__} _o{self.key})"


def rebuild(cls, attrs: dict):
    """What a trace calls to make a Rebuilt object: a bare instance with the recorded attributes."""
    obj = object.__new__(cls)
    obj.__dict__.update(attrs)
    return obj


def _rebuilt_nodes(x, out: dict) -> dict:
    """key -> Rebuilt reached from `x`, children before the objects holding them."""
    for leaf in pytree.tree_leaves(x, rebuilt=True):
        if type(leaf) is Rebuilt and leaf.key not in out:
            _rebuilt_nodes(leaf.attrs, out)
            out.setdefault(leaf.key, leaf)
    return out


class Trace:
    def __init__(self, name: str = "computation"):
        self.name = name
        self.args: list = []  # parameters of the printed function (proxies, or plain names for prologues)
        self.bsyms: list[BoundSymbol] = []
        self.output: Any = None
        self.constants: dict[str, Any] = {}  # printed name -> object, for values with no literal form
        self.header: str = ""  # first comment line (which pass produced it)
        self._counter = 0
        self._callable = None
        self.extra_lines: list[str] | None = None  # for traces whose body is generated directly
        self.wrap_try = False  # prologue: any exception while checking means "does not match"

    def new_name(self, prefix: str = "t") -> str:
        name = f"{prefix}{self._counter}"
        self._counter += 1
        return name

    def copy_with(self, bsyms, header: str) -> "Trace":
        t = Trace(self.name)
        t.args, t.bsyms, t.output, t.constants = self.args, list(bsyms), self.output, dict(self.constants)
        t.header, t._counter, t.extra_lines, t.wrap_try = header, self._counter, self.extra_lines, self.wrap_try
        return t

    # ---- printing ----
    def const_expr(self, x) -> str:
        if x is None or isinstance(x, (bool, str)) or type(x) is int:
            return repr(x)
        if type(x) is float:
            if math.isnan(x):
                return "nan"
            if math.isinf(x):
                return "inf" if x > 0 else "-inf"
            return repr(x)  # "-0.0" keeps its sign
        if isinstance(x, (IntegerProxy, FloatProxy)):
            return self.const_expr(x.value)
        if type(x) is complex:
            return repr(x)
        if x is Ellipsis:
            return "..."
        if isinstance(x, torch.dtype):
            return str(x)  # "torch.float32"
        if isinstance(x, torch.device):
            return f"torch.device({str(x)!r})"
        if isinstance(x, torch.Size):
            return f"torch.Size({[int(i) for i in x]!r})"  # (its ints may be IntegerProxy: guarded values)
        if isinstance(x, slice):
            return f"slice({self.expr(x.start)}, {self.expr(x.stop)}, {self.expr(x.step)})"
        if isinstance(x, torch.memory_format) or isinstance(x, torch.layout):
            return str(x)
        if x is torch.Tensor:
            return "Tensor"
        if x is torch.nn.Parameter:
            return "torch.nn.Parameter"
        # No literal: keep the object itself in the trace's namespace.
        for k, v in self.constants.items():
            if v is x:
                return k
        name = f"_k{len(self.constants)}"
        self.constants[name] = x
        return name

    def expr(self, x) -> str:
        if isinstance(x, (TensorProxy, OpaqueProxy)) or isinstance(x, Symbolic):
            return x.name
        if type(x) is SameObject:
            return self.const_expr(x.obj)
        if type(x) is Rebuilt:
            return f"_o{x.key}"
        if type(x) is tuple:
            inner = ", ".join(self.expr(i) for i in x)
            return f"({inner},)" if len(x) == 1 else f"({inner})"
        if type(x) is list:
            return "[" + ", ".join(self.expr(i) for i in x) + "]"
        if type(x) is dict:
            return "{" + ", ".join(f"{self.expr(k)}: {self.expr(v)}" for k, v in x.items()) + "}"
        if type(x) is collections.OrderedDict:
            items = ", ".join(f"({self.expr(k)}, {self.expr(v)})" for k, v in x.items())
            return f"{self.const_expr(collections.OrderedDict)}([{items}])"
        if type(x) is collections.defaultdict:
            items = ", ".join(f"{self.expr(k)}: {self.expr(v)}" for k, v in x.items())
            return f"{self.const_expr(collections.defaultdict)}({self.const_expr(x.default_factory)}, {{{items}}})"
        if type(x) is set or type(x) is frozenset:
            items = ", ".join(self.expr(v) for v in x)
            return f"{type(x).__name__}([{items}])"
        if pytree.is_dataclass_instance(x):  # ModelOutput(logits=t3, hidden=t2)
            fields = ", ".join(f"{name}={self.expr(getattr(x, name))}" for name in type(x).__dataclass_fields__)
            if isinstance(x, dict):  # its keys are its items, not its fields (pytree.with_items)
                items = ", ".join(f"({self.expr(k)}, {self.expr(v)})" for k, v in dict.items(x))
                return f"{self.const_expr(pytree.with_items)}({self.const_expr(type(x))}({fields}), [{items}])"
            return f"{self.const_expr(type(x))}({fields})"
        if isinstance(x, torch.Size) and any(isinstance(i, Symbolic) for i in x):
            return f"torch.Size([{', '.join(self.expr(i) for i in x)}])"  # symbolic sizes: by name
        if isinstance(x, tuple) and not isinstance(x, torch.Size):
            items = ", ".join(self.expr(i) for i in x)
            if hasattr(x, "_fields"):  # namedtuple: Cls(a, b)
                return f"{self.const_expr(type(x))}({items})"
            return f"{self.const_expr(type(x))}(({items},))"  # structseq (torch.return_types): Cls((a, b))
        return self.const_expr(x)

    def _target(self, out, defined: set) -> str:
        """Assignment target for a bsym's output; names already bound (in-place results) become `_`."""
        if isinstance(out, TensorProxy):
            return "_" if out.name in defined else out.name
        if isinstance(out, OpaqueProxy):  # a generator made inside the function
            return out.name
        if isinstance(out, (tuple, list)):
            return "(" + "".join(self._target(o, defined) + ", " for o in out) + ")"
        return "_"

    def call_expr(self, bsym: BoundSymbol, callee: str | None = None) -> str:
        callee = callee or (bsym.impl[1] if bsym.impl else bsym.symbol.name)
        parts = [self.expr(a) for a in bsym.args] + [f"{k}={self.expr(v)}" for k, v in bsym.kwargs.items()]
        return f"{callee}({', '.join(parts)})"

    def python_source(self, with_comments: bool = True) -> str:
        lines = []
        if self.header and with_comments:
            lines.append(f"# {self.header}")
        params = ", ".join(a.name if isinstance(a, (TensorProxy, OpaqueProxy, Symbolic)) else str(a)
                           for a in self.args)
        lines.append(f"def {self.name}({params}):")
        if self.extra_lines is not None:
            lines += ["  " + ln for ln in self.extra_lines]
        else:
            defined = {a.name for a in self.args if isinstance(a, TensorProxy)}
            last_loc, made = None, set()  # (keys of the Rebuilt objects made so far)
            for bsym in self.bsyms:
                lines += self._rebuild_lines((bsym.args, bsym.kwargs), made)  # (an object the call stores)
                if with_comments and bsym.location is not None and bsym.location != last_loc:
                    loc = bsym.location
                    lines.append(f"  # {os.path.basename(loc.filename)}:{loc.lineno} {loc.function}: {loc.line}")
                    last_loc = loc
                if bsym.symbol.printer is not None:
                    lines += ["  " + ln for ln in bsym.symbol.printer(bsym, self)]
                    continue
                target = self._target(bsym.output, defined)
                call = self.call_expr(bsym)
                lines.append(f"  {call}" if target.strip("(),_ ") == "" else f"  {target} = {call}")
                if with_comments:
                    for sub in bsym.subsymbols:
                        lines.append(f"    # {self._target(sub.output, set())} = {self.call_expr(sub, sub.symbol.name)}")
                defined.update(o.name for o in bsym.tensor_outputs())
            lines += self._rebuild_lines(self.output, made)  # objects the call made, made again
            lines.append(f"  return {self.expr(self.output)}")
        if self.wrap_try:
            start = 2 if self.header and with_comments else 1
            body = ["  " + ln for ln in lines[start:]]
            lines = lines[:start] + ["  try:"] + body + ["  except Exception:", "    return None"]
        return "\n".join(lines) + "\n"

    def _rebuild_lines(self, x, made: set) -> list:
        """`_o0 = rebuild(Cls, {...})` for each object in `x` the call made that is not made yet."""
        lines = []
        for node in _rebuilt_nodes(x, {}).values():
            if node.key not in made:
                made.add(node.key)
                lines.append(f"  _o{node.key} = {self.const_expr(rebuild)}({self.const_expr(node.cls)}, "
                             f"{self.expr(node.attrs)})")
        return lines

    def __str__(self):
        return self.python_source()

    def python_ctx(self) -> dict:
        self.python_source()  # registers constants
        ctx = dict(BASE_CTX)
        ctx.update(self.constants)
        return ctx

    def python_callable(self):
        """Compile the printed source once; the cache calls the result directly on every hit."""
        if self._callable is None:
            src = self.python_source()
            ctx = self.python_ctx()
            code = compile(src, f"<thunder-lint {self.name} trace>", "exec")
            exec(code, ctx)
            self._callable = ctx[self.name]
        return self._callable
