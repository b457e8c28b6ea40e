"""No traced value may be left in user state after a jitted call: a sweep for compiler proxies reachable from
globals, closure cells, function defaults and attributes, modules and containers (used after every test of the
compiler suite by conftest.py, on the test module's globals, and by the fuzzer on each program's module state)."""
from __future__ import annotations

import types

import torch

from compiler.core.proxies import NumberProxy, Proxy, Symbolic

_ATOMS = (str, bytes, int, float, complex, bool, type(None), torch.dtype, torch.device, torch.Size, type,
          types.BuiltinFunctionType, types.ModuleType)
_BIG = 256  # containers larger than this are not gone into (the op-sample tables): proxies escape into small ones


def proxies_reachable(roots, limit: int = 20000) -> list[str]:
    """Paths to every compiler proxy (tensor or number) reachable from `roots` through containers, object
    attributes, nn.Modules, closure cells and function defaults."""
    found, seen, stack = [], set(), [(r, f"root[{i}]") for i, r in enumerate(roots)]
    while stack and len(seen) < limit:
        value, path = stack.pop()
        if isinstance(value, (Proxy, NumberProxy, Symbolic)):
            found.append(f"{path}: {type(value).__name__}")
            continue
        if id(value) in seen or isinstance(value, _ATOMS):
            continue
        seen.add(id(value))
        if isinstance(value, torch.Tensor):
            try:
                grad = value.grad if value.is_leaf else None
            except RuntimeError:  # (a multi-output view whose base was written: autograd refuses to look)
                grad = None
            if grad is not None:
                stack.append((grad, f"{path}.grad"))
            stack += [(v, f"{path}.{k}") for k, v in vars(value).items()]  # (Python attributes set on it)
            continue
        if isinstance(value, dict):
            if len(value) <= _BIG:
                stack += [(v, f"{path}[{k!r}]") for k, v in list(value.items())]
        elif isinstance(value, (list, tuple, set, frozenset)):
            if len(value) <= _BIG:
                stack += [(v, f"{path}[{i}]") for i, v in enumerate(list(value))]
        elif type(value).__module__.startswith(("compiler.", "_pytest.")):
            continue  # the compiler's own objects (jitted functions, cache entries, traces) hold proxies by design
        elif isinstance(value, types.FunctionType):  # (its globals are a root of their own where they matter)
            stack += [(c.cell_contents, f"{path}.<cell {n}>") for n, c in zip(value.__code__.co_freevars,
                                                                              value.__closure__ or ()) if _full(c)]
            stack += [(d, f"{path}.__defaults__") for d in (value.__defaults__ or ())]
            stack += [(v, f"{path}.__kwdefaults__[{k!r}]") for k, v in (value.__kwdefaults__ or {}).items()]
            stack += [(v, f"{path}.{k}") for k, v in vars(value).items() if k != "pytestmark"]
        elif isinstance(value, types.MethodType):
            stack.append((value.__self__, f"{path}.__self__"))
        elif hasattr(value, "__dict__") and not isinstance(value, type):
            try:
                stack += [(v, f"{path}.{k}") for k, v in vars(value).items()]
            except TypeError:
                pass
    return found


def _full(cell) -> bool:
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False
