"""While the native front end traces, `isinstance(x, torch.Tensor)` (and torch.is_tensor, which calls it)
must say True for a traced tensor, or user code silently takes another branch than eager.

Proxies cannot be torch.Tensor instances (torch's C++ argument parser would then read them as real
tensors and crash), so during tracing only, the builtin `isinstance` is replaced by one that answers for
proxies and defers to the original for everything else; it is restored when the last trace ends. C code
is unaffected (it does not look the builtin up). The bytecode interpreter replaces this with lookasides.

`type(x) is torch.Tensor` cannot be answered this way (`type` is also the metaclass of every class): the
interpreting front end answers it with `traced_type`, a lookaside for `type(...)`; the native front end
refuses user code comparing `type(...)` with `torch.Tensor` with a clear error instead.
"""
from __future__ import annotations

import builtins
import dis
import threading
import types

import torch

from ..core.errors import CompilerError
from ..core.proxies import FloatProxy, IntegerProxy, TensorProxy

_real_isinstance = builtins.isinstance
_lock = threading.Lock()
_depth = 0


def _answers_tensor(obj, cls) -> bool:
    if cls is torch.Tensor:
        return True
    if cls is torch.nn.Parameter:
        return obj.is_parameter
    if type(cls) is tuple:
        return any(_answers_tensor(obj, c) for c in cls)
    return False


def tracing_isinstance(obj, cls):
    if type(obj) is TensorProxy and _answers_tensor(obj, cls):
        return True
    return _real_isinstance(obj, cls)


class answering_isinstance:
    def __enter__(self):
        global _depth
        with _lock:
            if _depth == 0:
                builtins.isinstance = tracing_isinstance
            _depth += 1

    def __exit__(self, *exc):
        global _depth
        with _lock:
            _depth -= 1
            if _depth == 0:
                builtins.isinstance = _real_isinstance


def traced_type(*args):
    """builtins.type under the interpreter: a traced tensor's type is the type of the tensor it stands for."""
    if len(args) == 1 and _real_isinstance(args[0], TensorProxy):
        return torch.nn.Parameter if args[0].is_parameter else torch.Tensor
    if len(args) == 1 and _real_isinstance(args[0], (IntegerProxy, FloatProxy)):  # number proxies: int or float
        return int if _real_isinstance(args[0], int) else float
    if len(args) == 1 and type(args[0]).__name__ == "SymBool":
        return bool
    return type(*args)


def refuse_type_is_tensor(codes) -> None:
    """Raise if user code compares type(...) with torch.Tensor (it would be False for a traced tensor)."""
    for code, label in codes:
        if "type" not in code.co_names or "Tensor" not in code.co_names:
            continue
        prev = None
        for ins in dis.get_instructions(code):
            if ins.opname in ("IS_OP", "COMPARE_OP") and prev is not None and prev.argval == "Tensor" and \
                    prev.opname in ("LOAD_ATTR", "LOAD_GLOBAL", "LOAD_NAME", "LOAD_METHOD"):
                line = ins.positions.lineno if ins.positions else None
                raise CompilerError(
                    f"{code.co_filename}:{line} ({label}) compares type(...) with torch.Tensor: traced tensors are "
                    "proxies, so the answer would differ from eager. Use isinstance(x, torch.Tensor)")
            if ins.opname not in ("CACHE", "PRECALL", "CALL", "NOP"):
                prev = ins


def user_code_objects(found_codes: list) -> list:
    """All code objects (nested ones too) of the given (code, label) pairs."""
    out = []
    stack = list(found_codes)
    while stack:
        code, label = stack.pop()
        out.append((code, label))
        stack.extend((c, label) for c in code.co_consts if _real_isinstance(c, types.CodeType))
    return out
