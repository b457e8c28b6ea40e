"""Prologue: the guard function of a cache entry.

It checks every assumption the computation trace was built on - argument structure and types, each
tensor's dtype/shape/strides/device/requires_grad (strides decide whether reshape views or copies),
number values, module flags, grad mode, default dtype and device - and returns the computation's inputs,
or None when any assumption fails. Guards are symbols run by the Python executor; each prints as plain
attribute checks, so a cache hit costs one generated Python function with no per-op dispatch.
"""
from __future__ import annotations

import math
import types

import torch

from ..features import autocast, torch_flags
from ..core import tree as pytree
from ..core.errors import UnsupportedInputError
from .state_objects import StateObjects, is_state_object
from .hidden_inputs import UNSET, hidden_values
from ..meta.functions import meta_like, shared_metas
from ..core.proxies import FloatProxy, IntegerProxy, OpaqueProxy, TensorProxy
from ..core.symbols import BoundSymbol, Symbol, Tag
from ..core.trace import Trace

SUPPORTED_INPUTS = ("torch.Tensor, nn.Parameter, int, float, bool, complex, str, None, torch.dtype, "
                    "torch.device, torch.Size, torch.layout, torch.memory_format, slice, Ellipsis, torch.Generator, numpy "
                    "scalars, dtypes and arrays, tuple/list/dict (str keys) of these, and (by identity) nn.Modules, "
                    "functions, functools.partial, classes, context managers and instances of your own classes")


def _guard(name: str, printer) -> Symbol:
    return Symbol(f"guards.{name}", None, Tag.EFFECT, meta=None, printer=printer)


def _fail_if(cond: str) -> list[str]:
    return [f"if {cond}: return None"]


def _print_unpack(bsym, trace):
    target, source = bsym.args
    return [f"{target} = {source}"]


def _print_structure(bsym, trace):
    name, kind, keys = bsym.args
    if kind == "args":
        n, kwkeys = keys
        return _fail_if(f"len({name}) != {n}") + _fail_if(f"kwargs.keys() != {set(kwkeys) if kwkeys else 'set()'}" if kwkeys else "kwargs")
    if kind in ("tuple", "list"):
        return _fail_if(f"type({name}) is not {kind} or len({name}) != {keys}")
    if kind == "namedtuple":
        cls, n = keys
        return _fail_if(f"type({name}) is not {trace.const_expr(cls)} or len({name}) != {n}")
    return _fail_if(f"type({name}) is not dict or tuple({name}) != {tuple(keys)!r}")


def _device_check(name: str, dev: torch.device) -> str:
    if dev.type == "cpu":
        return f"{name}.is_cpu is not True"
    if dev.type == "meta":
        return f"{name}.is_meta is not True"
    if dev.type == "cuda":
        return f"{name}.get_device() != {dev.index or 0}"
    return f"{name}.device != torch.device({str(dev)!r})"


class TensorFacts:
    """What the guard checks of a tensor, without the tensor: a cache entry must not keep its first call's
    arguments alive."""

    __slots__ = ("cls", "dtype", "shape", "strides", "device", "requires_grad", "is_leaf")

    def __init__(self, t: torch.Tensor):
        self.cls, self.dtype, self.shape, self.strides = type(t), t.dtype, tuple(t.shape), tuple(t.stride())
        self.device, self.requires_grad, self.is_leaf = t.device, t.requires_grad, t.is_leaf

    def stride(self):
        return self.strides


def _print_tensor(bsym, trace):
    name, t = bsym.args
    tname = trace.const_expr(t.cls)
    conds = [f"type({name}) is not {tname}", f"{name}.dtype is not {t.dtype}",
             f"{name}.shape != {tuple(t.shape)!r}", f"{name}.stride() != {tuple(t.stride())!r}",
             _device_check(name, t.device), f"{name}.requires_grad is not {t.requires_grad}"]
    if t.requires_grad:
        conds.append(f"({name}.grad_fn is None) is not {t.is_leaf}")
    return _fail_if(" or ".join(conds))


def _print_tensor_symbolic(bsym, trace):
    """cache="symbolic values": sizes >= 2 are symbolic (any size >= 2 passes), 0 and 1 are exact; the
    layout is checked as contiguity (the trace's view-or-copy decisions assume it)."""
    name, t, sizes = bsym.args
    tname = trace.const_expr(t.cls)
    conds = [f"type({name}) is not {tname}", f"{name}.dtype is not {t.dtype}", f"{name}.dim() != {len(t.shape)}"]
    conds += [f"{name}.shape[{d}] < 2" if isinstance(s, str) else f"{name}.shape[{d}] != {s}"
              for d, s in enumerate(sizes)]
    conds += [f"not {name}.is_contiguous()", _device_check(name, t.device),
              f"{name}.requires_grad is not {t.requires_grad}"]
    if t.requires_grad:
        conds.append(f"({name}.grad_fn is None) is not {t.is_leaf}")
    lines = _fail_if(" or ".join(conds))
    return lines + [f"{s} = {name}.shape[{d}]" for d, s in enumerate(sizes) if isinstance(s, str)]


def _print_generator(bsym, trace):
    name, g = bsym.args
    return _fail_if(f"type({name}) is not torch.Generator or {name}.device != {trace.const_expr(g.device)}")


# Values passed through as they are and guarded by value (dtype, layout and memory_format are singletons).
_VALUE_TYPES = (torch.dtype, torch.device, torch.layout, torch.memory_format, torch.Size)


def _print_value(bsym, trace):
    name, value = bsym.args
    if isinstance(value, bool) or value is None:
        return _fail_if(f"{name} is not {value!r}")
    if isinstance(value, float) and math.isnan(value):
        return _fail_if(f"type({name}) is not float or {name} == {name}")
    if isinstance(value, float) and value == 0.0:  # 0.0 == -0.0, but 1 / x and copysign tell them apart
        sign = math.copysign(1.0, value)
        return _fail_if(f"type({name}) is not float or {name} != 0.0 or math.copysign(1.0, {name}) != {sign}")
    if isinstance(value, (int, float, complex, str)):
        return _fail_if(f"type({name}) is not {type(value).__name__} or {name} != {trace.const_expr(value)}")
    if isinstance(value, torch.Size):  # a tuple of the same ints compares equal: check the type too
        return _fail_if(f"type({name}) is not torch.Size or {name} != {trace.const_expr(value)}")
    if isinstance(value, (torch.dtype, torch.device, torch.layout, torch.memory_format)) or value is Ellipsis:
        return _fail_if(f"{name} is not {trace.const_expr(value)}" if not isinstance(value, torch.device)
                        else f"{name} != {trace.const_expr(value)}")
    return _fail_if(f"{name} != {trace.const_expr(value)}")


def _print_module_flag(bsym, trace):
    module, flag = bsym.args
    return _fail_if(f"{trace.const_expr(module)}.training is not {flag}")


def _print_globals(bsym, trace):
    grad, dtype, device, autocast_state, flags = bsym.args
    # torch.get_default_device() costs ~3 us (it scans the torch-function mode stack in Python); a
    # non-cpu default is itself such a mode, so an empty stack proves the default is cpu in ~0.1 us.
    if device == torch.device("cpu"):
        dev_check = "(torch._C._len_torch_function_stack() != 0 and torch.get_default_device() != _cpu)"
        trace.constants["_cpu"] = device
    else:
        dev_check = f"torch.get_default_device() != {trace.const_expr(device)}"
    # autocast changes op dtypes at run time: a trace is valid only under the autocast state it was made in
    return _fail_if(f"torch.is_grad_enabled() is not {grad} or torch.get_default_dtype() is not {dtype} "
                    f"or {dev_check} or {autocast.guard_expr(trace, autocast_state)} "
                    f"or {torch_flags.guard_expr(trace, flags)}")


def _print_hidden(bsym, trace):
    (h,) = bsym.args
    holder = h.holder if h.kind == "argument" else trace.const_expr(h.holder)  # (an argument: its variable)
    read = {"global": f"{holder}[{h.key!r}]", "cell": f"{holder}.cell_contents", "argument": holder,
            "attribute": f"{holder}.{h.key}", "child": f"{holder}._modules[{h.key!r}]",
            "environ": f"{holder}.get({h.key!r})",
            "contextvar": f"{holder}.get({trace.const_expr(UNSET) if h.kind == 'contextvar' else ''})"}[h.kind]
    for step, k in h.path:
        read += f"[{k!r}]" if step == "item" else f".{k}"
    v = h.value
    if h.check in ("list", "tuple"):
        return _fail_if(f"type({read}) is not {h.check} or len({read}) != {h.shape}")
    if h.check == "names":  # how many attributes an object has (one added or deleted re-traces)
        return _fail_if(f"len({read}) != {h.shape}")
    if h.check == "dict":
        kind, keys, *also = h.shape  # also: the keys the trace's own stores leave (module_reads.py)
        if also:
            return _fail_if(f"type({read}) is not {trace.const_expr(kind)} or tuple({read}) not in {(keys, *also)!r}")
        return _fail_if(f"type({read}) is not {trace.const_expr(kind)} or tuple({read}) != {keys!r}")
    if h.check == "set":
        kind, items = h.shape
        if isinstance(items, frozenset):  # plain values: compared by value
            return _fail_if(f"type({read}) is not {trace.const_expr(kind)} or {read} != {trace.const_expr(items)}")
        ids = frozenset(id(i) for i in items)  # (the items are kept alive by the guard's HiddenValue)
        return _fail_if(f"type({read}) is not {trace.const_expr(kind)} or len({read}) != {len(items)} or "
                        f"not {{id(i) for i in {read}}} <= {trace.const_expr(ids)}")
    if h.check == "value":
        if isinstance(v, float) and v != v:
            return _fail_if(f"type({read}) is not float or {read} == {read}")
        if v is None or isinstance(v, bool):
            return _fail_if(f"{read} is not {v!r}")
        if isinstance(v, float) and v == 0.0:
            return _fail_if(f"type({read}) is not float or {read} != 0.0 or "
                            f"math.copysign(1.0, {read}) != {math.copysign(1.0, v)}")
        tname = type(v).__name__ if type(v) in (int, float, complex, str, tuple) else trace.const_expr(type(v))
        value = trace.expr(v) if isinstance(v, tuple) else trace.const_expr(v)
        return _fail_if(f"type({read}) is not {tname} or {read} != {value}")
    return _fail_if(f"{read} is not {trace.const_expr(v)}")


def _print_numpy_value(bsym, trace):
    name, value = bsym.args
    if isinstance(value, type):  # np.float32 as a dtype
        return _fail_if(f"{name} is not {trace.const_expr(value)}")
    if isinstance(value, _numpy().dtype):
        return _fail_if(f"type({name}) is not {trace.const_expr(type(value))} or {name} != {trace.const_expr(value)}")
    # a numpy scalar: its type and bits (NaN and -0.0 included)
    return _fail_if(f"type({name}) is not {trace.const_expr(type(value))} or {name}.tobytes() != {value.tobytes()!r}")


def _print_numpy_array(bsym, trace):
    name, (dtype, shape, strides, data) = bsym.args
    return _fail_if(f"type({name}) is not {trace.const_expr(_numpy().ndarray)} or {name}.dtype != "
                    f"{trace.const_expr(dtype)} or {name}.shape != {shape!r} or {name}.strides != {strides!r} or "
                    f"{name}.tobytes() != {trace.const_expr(data)}")


def _numpy():
    import numpy

    return numpy


def _is_numpy_value(x) -> bool:
    """A numpy scalar (np.float32(2.0)), dtype (np.dtype("float32")) or scalar type used as a dtype (np.float32)."""
    if not _numpy_loaded():
        return False
    np = _numpy()
    if isinstance(x, type):
        return issubclass(x, np.generic)
    return isinstance(x, (np.generic, np.dtype))


def _is_numpy_array(x) -> bool:
    return _numpy_loaded() and type(x) is _numpy().ndarray


def _numpy_loaded() -> bool:
    import sys

    return "numpy" in sys.modules


def _passed_by_identity(x) -> bool:
    """Objects passed as they are and guarded by identity (and by what they hold): nn.Modules,
    functools.partial, functions, methods and classes, context managers (torch's, @contextmanager's, the
    user's) and instances of the user's classes."""
    import contextlib
    import functools
    import sys

    if isinstance(x, (torch.nn.Module, functools.partial, contextlib.AbstractContextManager, type,
                      types.FunctionType, types.MethodType, types.BuiltinFunctionType)):
        return True
    mod = (getattr(type(x), "__module__", "") or "").split(".")[0]
    if mod == "torch":
        return hasattr(type(x), "__enter__") and hasattr(type(x), "__exit__")  # no_grad(), autocast(...)
    return hasattr(x, "__dict__") and mod not in sys.stdlib_module_names and mod not in ("builtins", "compiler")


def _print_state_object(bsym, trace):
    var, cls, names = bsym.args
    return _fail_if(f"type({var}) is not {trace.const_expr(cls)} or tuple({var}.__dict__) != {names!r}")


def _print_same(bsym, trace):
    var, first = bsym.args
    return _fail_if(f"{var} is not {first}")


def _print_distinct(bsym, trace):
    (names,) = bsym.args
    return _fail_if(f"len({{{', '.join(f'id({n})' for n in names)}}}) != {len(names)}")


def sharing(*tensors) -> tuple:
    """Which of these tensors view one base (shared_metas' groups), and where: per tensor, the position of the
    first one with the same base, and its storage offset within that base where several share it."""
    roots = [t if t._base is None else t._base for t in tensors]
    count: dict = {}
    for r in roots:
        count[id(r)] = count.get(id(r), 0) + 1
    first: dict = {}
    return tuple((first.setdefault(id(r), i), t.storage_offset() - r.storage_offset() if count[id(r)] > 1 else 0)
                 for i, (t, r) in enumerate(zip(tensors, roots)))


def _print_sharing(bsym, trace):
    names, expected = bsym.args
    if expected == tuple((i, 0) for i in range(len(names))):  # (the usual answer, none shares a base: inline)
        bases = ", ".join(f"id({n} if {n}._base is None else {n}._base)" for n in names)
        return _fail_if(f"len({{{bases}}}) != {len(names)}")
    return _fail_if(f"{trace.const_expr(sharing)}({', '.join(names)}) != {expected!r}")


def _print_symbolic_input(bsym, trace):
    name, source, kind = bsym.args
    return [f"{name} = {source}"] + _fail_if(f"type({name}) is not {kind}")


def _print_constraint(bsym, trace):
    (c,) = bsym.args
    where = f"  # {c.location.filename.rsplit('/', 1)[-1]}:{c.location.lineno}" if c.location is not None else ""
    return [f"if not ({c.expr}): return None{where}"]


def _print_return(bsym, trace):
    return [f"return ({''.join(n + ', ' for n in bsym.args[0])})"]


UNPACK = _guard("unpack", _print_unpack)
CHECK_STRUCTURE = _guard("check_structure", _print_structure)
CHECK_TENSOR = _guard("check_tensor", _print_tensor)
CHECK_VALUE = _guard("check_value", _print_value)
CHECK_GENERATOR = _guard("check_generator", _print_generator)
CHECK_MODULE_FLAG = _guard("check_module_training", _print_module_flag)
CHECK_GLOBAL_STATE = _guard("check_global_state", _print_globals)
RETURN_INPUTS = _guard("return_inputs", _print_return)
CHECK_HIDDEN = _guard("check_hidden_value", _print_hidden)
CHECK_SAME = _guard("check_same_object", _print_same)
CHECK_STATE_OBJECT = _guard("check_state_object", _print_state_object)
CHECK_DISTINCT = _guard("check_distinct_objects", _print_distinct)
CHECK_SHARING = _guard("check_sharing", _print_sharing)
CHECK_NUMPY_VALUE = _guard("check_numpy_value", _print_numpy_value)
CHECK_NUMPY_ARRAY = _guard("check_numpy_array", _print_numpy_array)
CHECK_TENSOR_SYMBOLIC = _guard("check_tensor_symbolic_sizes", _print_tensor_symbolic)
SYMBOLIC_INPUT = _guard("symbolic_input", _print_symbolic_input)  # cache="symbolic values": type only
CHECK_CONSTRAINT = _guard("check_constraint", _print_constraint)  # a decision made on symbolic values


class PrologueBuilder:
    """Walks the arguments once: makes the proxies the trace sees and the guards the prologue checks."""

    def __init__(self, state):
        self.state = state
        self.bsyms: list[BoundSymbol] = []
        self.input_names: list[str] = []  # prologue variables returned to the computation, in order
        self._n = 0
        self.containers: list = []  # (list/dict given to the function, its items then, origin)
        self.arg_tensors: dict = {}  # id(tensor argument) -> (proxy, prologue variable)
        self.grads: dict = {}  # input proxy name -> the proxy of its .grad (or None)
        self.hidden_guarded: set = set()  # (id(holder), key, path) of the hidden values guarded so far
        self.hidden_found: list = []  # what `hidden` found statically
        self.arg_objects: dict = {}  # id(argument object holding tensors) -> (its OpaqueProxy, prologue variable)
        self.state_objects = StateObjects()
        self._trace_for_consts = Trace("prologue")
        self._trace_for_consts.wrap_try = True
        self.labels: dict = {}  # origin "args[1]" -> the parameter's name, for naming symbolic inputs
        self._sym_names: set = set()
        self.shared: dict = {}  # id(argument tensor) -> its meta, for arguments that view one base (shared_metas)
        self.sharing_guard = None  # (argument variables, sharing(...) of their tensors) while autograd records

    def _var(self) -> str:
        self._n += 1
        return f"v{self._n}"

    def _emit(self, sym, *args):
        self.bsyms.append(BoundSymbol(sym, args, {}, None))

    def tensor_input(self, var: str, t: torch.Tensor, origin: str) -> TensorProxy:
        m = self.shared.get(id(t))
        p = TensorProxy(self.state.trace.new_name("t"), meta_like(t) if m is None else m, t.device, origin=origin)
        p.is_parameter = type(t) is torch.nn.Parameter
        self._emit(CHECK_TENSOR, var, TensorFacts(t))
        self.state.inputs.append(p)
        self.state.real_inputs[p.name] = t
        self.input_names.append(var)
        return p

    def tensor_input_symbolic(self, var: str, t: torch.Tensor, origin: str) -> TensorProxy:
        """An argument tensor whose sizes >= 2 are symbolic inputs of the computation too."""
        from ..symbolic.values import SymInt, input_name

        m = self.shared.get(id(t))
        p = TensorProxy(self.state.trace.new_name("t"), meta_like(t) if m is None else m, t.device, origin=origin)
        p.is_parameter = type(t) is torch.nn.Parameter
        self.state.inputs.append(p)
        self.state.real_inputs[p.name] = t
        self.input_names.append(var)
        names, sym = [], []
        for d, s in enumerate(t.shape):
            if s < 2:
                names.append(s)
                sym.append(s)
                continue
            name = input_name(f"{self._label(origin)}_shape{d}", self._sym_names)
            size = SymInt(name, s)
            size.at_least_2 = True  # the prologue checks it (broadcasting never sees it as 1)
            names.append(name)
            sym.append(size)
            self.state.inputs.append(size)
            self.state.real_inputs[name] = s
            self.input_names.append(name)
        p.sym_shape = tuple(sym)
        self._emit(CHECK_TENSOR_SYMBOLIC, var, TensorFacts(t), tuple(names))
        return p

    def grad_of(self, proxy: TensorProxy):
        """`x.grad` of an input: one more input, fetched from that input by the prologue on every call (gradient
        clipping, hand-written optimizer steps), guarded as None or as a tensor."""
        if proxy.name in self.grads:
            return self.grads[proxy.name]
        i = next(i for i, p in enumerate(self.state.inputs) if p is proxy)
        var = self._var()
        self._emit(UNPACK, var, f"{self.input_names[i]}.grad")
        real = self.state.real_inputs[proxy.name].grad
        if real is None:
            self._emit(CHECK_VALUE, var, None)
            result = None
        else:
            with torch._C.DisableTorchFunction():  # called while tracing: the meta tensor is no traced op
                result = self.tensor_input(var, real, f"{proxy.origin}.grad")
        self.grads[proxy.name] = result
        return result

    def arguments(self, args, kwargs):
        self._emit(CHECK_STRUCTURE, "args", "args", (len(args), tuple(kwargs)))
        tensors = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        recording = torch.is_grad_enabled() and any(t.requires_grad for t in tensors)
        if recording:  # (autograd's in-place checks depend on which arguments view one base: their meta tensors too)
            self.shared = shared_metas(tensors)
        pargs = tuple(self.value(f"args[{i}]", a, f"args[{i}]") for i, a in enumerate(args))
        pkwargs = {k: self.value(f"kwargs[{k!r}]", v, f"kwargs[{k!r}]") for k, v in kwargs.items()}
        if recording and len(self.arg_tensors) > 1:
            # which arguments view one base, and where (as the call found them): the trace's autograd checks, and
            # the meta tensors, were decided on it; finish() emits the guard
            entries = [(var, self.state.real_inputs.get(p.name)) for p, var in self.arg_tensors.values()]
            entries = [(var, t) for var, t in entries if t is not None]
            self.sharing_guard = (tuple(v for v, _ in entries), sharing(*(t for _, t in entries)))
        return pargs, pkwargs

    def value(self, source: str, x, origin: str):
        t = type(x)
        if (t is torch.Tensor or t is torch.nn.Parameter) and x.layout is not torch.strided:
            raise UnsupportedInputError(f"unsupported input at {origin}: a {x.layout} tensor (only strided tensors "
                                        "are traced)")
        if t is torch.Tensor or t is torch.nn.Parameter:
            var = self._var()
            self._emit(UNPACK, var, source)
            seen = self.arg_tensors.get(id(x))
            if seen is not None:  # f(x, x): one object, one proxy (`a is b` answers as in eager)
                self._emit(CHECK_SAME, var, seen[1])
                return seen[0]
            if self.state.symbolic and x.is_contiguous() and any(s >= 2 for s in x.shape):
                p = self.tensor_input_symbolic(var, x, origin)
            else:
                p = self.tensor_input(var, x, origin)
            self.arg_tensors[id(x)] = (p, var)
            return p
        if x is None or x is Ellipsis or t in (bool, str, complex, slice) or isinstance(x, _VALUE_TYPES):
            var = self._var()
            self._emit(UNPACK, var, source)
            self._emit(CHECK_VALUE, var, x)
            return x
        if (t is int or t is float) and self.state.symbolic and not (t is float and (not math.isfinite(x) or x == 0.0)):
            from ..symbolic.values import SymFloat, SymInt, input_name

            name = input_name(self._label(origin), self._sym_names)
            self._emit(SYMBOLIC_INPUT, name, source, t.__name__)
            p = (SymInt if t is int else SymFloat)(name, x)
            self.state.inputs.append(p)
            self.state.real_inputs[name] = x  # (segments run before a user's exception use it)
            self.input_names.append(name)
            return p
        if t is int or t is float:
            var = self._var()
            self._emit(UNPACK, var, source)
            self._emit(CHECK_VALUE, var, x)
            name = self.state.trace.new_name("i" if t is int else "f")
            return (IntegerProxy if t is int else FloatProxy)(name, x)
        if t is torch.Generator:
            var = self._var()
            self._emit(UNPACK, var, source)
            self._emit(CHECK_GENERATOR, var, x)
            p = OpaqueProxy(self.state.trace.new_name("g"), x, origin)
            self.state.inputs.append(p)
            self.state.opaque[id(x)] = p  # torch's argument parser wants the real object; ops record the proxy
            self.input_names.append(var)
            return x
        if t in (tuple, list):
            var = self._var()
            self._emit(UNPACK, var, source)
            self._emit(CHECK_STRUCTURE, var, t.__name__, len(x))
            built = t(self.value(f"{var}[{i}]", v, f"{origin}[{i}]") for i, v in enumerate(x))
            if t is list:
                self.containers.append((built, list(built), origin))
            return built
        if isinstance(x, tuple) and (hasattr(t, "_fields") or t.__module__ == "torch.return_types"):
            var = self._var()  # a namedtuple (or torch.return_types): a tuple of its own type
            self._emit(UNPACK, var, source)
            self._emit(CHECK_STRUCTURE, var, "namedtuple", (t, len(x)))
            items = [self.value(f"{var}[{i}]", v, f"{origin}[{i}]") for i, v in enumerate(x)]
            return t(*items) if hasattr(t, "_fields") else t(items)
        if t is dict and all(type(k) is str for k in x):
            var = self._var()
            self._emit(UNPACK, var, source)
            self._emit(CHECK_STRUCTURE, var, "dict", tuple(x))
            built = {k: self.value(f"{var}[{k!r}]", v, f"{origin}[{k!r}]") for k, v in x.items()}
            self.containers.append((built, dict(built), origin))
            return built
        if isinstance(x, torch.Tensor):
            raise UnsupportedInputError(f"unsupported input at {origin}: tensor subclass {t.__qualname__} "
                                        "(only torch.Tensor and nn.Parameter are traced)")
        if _is_numpy_value(x):  # a numpy scalar or dtype: a constant of the trace, guarded by type and value
            var = self._var()
            self._emit(UNPACK, var, source)
            self._emit(CHECK_NUMPY_VALUE, var, x)
            return x
        if _is_numpy_array(x):
            return self._numpy_array(source, x, origin)
        if is_state_object(x):
            return self._state_object(source, x, origin)
        if _passed_by_identity(x):
            return self._by_identity(source, x, origin)
        raise UnsupportedInputError(f"unsupported input at {origin}: a value of type {t.__module__}.{t.__qualname__}; "
                                    f"the compiler can guard and pass {SUPPORTED_INPUTS}")

    def _numpy_array(self, source: str, x, origin: str):
        """A numpy array: passed to the computation by reference (ops that read it, torch.from_numpy(a),
        read this call's array), guarded by type, dtype, shape, strides and contents (Python code may have
        read its values while tracing)."""
        var = self._var()
        self._emit(UNPACK, var, source)
        self._emit(CHECK_NUMPY_ARRAY, var, (x.dtype, x.shape, x.strides, x.tobytes()))
        p = OpaqueProxy(self.state.trace.new_name("g"), x, origin)
        self.state.inputs.append(p)
        self.state.opaque[id(x)] = p
        self.input_names.append(var)
        return x

    def _state_object(self, source: str, x, origin: str):
        """An object holding tensors (compiler/frontend/state_objects.py): an input of the computation, guarded
        by class and attribute names; what it holds goes through `value` (tensors become inputs), and the
        function sees it holding those proxies until tracing ends."""
        var = self._var()
        self._emit(UNPACK, var, source)
        seen = self.arg_objects.get(id(x))
        if seen is not None:  # one object reached twice: the same object on every call
            self._emit(CHECK_SAME, var, seen[1])
            return x
        before = dict(vars(x))
        self._emit(CHECK_STATE_OBJECT, var, type(x), tuple(before))
        p = OpaqueProxy(self.state.trace.new_name("o"), x, origin)
        self.state.inputs.append(p)
        self.input_names.append(var)
        self.arg_objects[id(x)] = (p, var)
        traced = {name: self.value(f"{var}.__dict__[{name!r}]", v, f"{origin}.{name}") for name, v in before.items()}
        self.state_objects.add(x, p, before, traced)
        vars(x).update(traced)
        return x

    def _by_identity(self, source: str, x, origin: str):
        """A user object, an nn.Module, a functools.partial or a context manager: the function gets the object
        itself; the guard checks it is the same object and that what it holds is as it was (its attributes,
        a module's parameters, flags and attributes: compiler/frontend/hidden_inputs.expand). Tensors it holds
        are used by reference, as globals' are."""
        from .hidden_inputs import HiddenValue, expand

        var = self._var()
        self._emit(UNPACK, var, source)
        for h in expand(HiddenValue("argument", var, origin, x, origin)):
            self._emit(CHECK_HIDDEN, h)
        return x

    def _label(self, origin: str) -> str:
        """`args[1][0]` -> `n_0` when args[1] is the parameter n."""
        import re

        m = re.match(r"(args\[\d+\]|kwargs\[[^\]]+\])(.*)", origin)
        if m is None:
            return origin
        head = self.labels.get(m.group(1), m.group(1))
        rest = re.sub(r"\[['\"]?([^\]'\"]*)['\"]?\]", r"_\1", m.group(2))
        return head + rest

    def module_tensors(self, module: torch.nn.Module, label: str):
        """Parameters and buffers become inputs (fetched from the module on every call); training flags are guarded."""
        swaps = []  # (dict, key, real tensor), to restore after tracing
        proxies = {}  # id(real tensor) -> proxy: tied weights become one input
        for prefix, sub in module.named_modules(remove_duplicate=False):
            self._emit(CHECK_MODULE_FLAG, sub, sub.training)
            for store in ("_parameters", "_buffers"):
                d = getattr(sub, store)
                for name, t in list(d.items()):
                    if t is None:
                        continue
                    existing = proxies.get(id(t))
                    if existing is None:
                        var = self._var()
                        self._emit(UNPACK, var, f"{{m}}.{store}[{name!r}]".replace("{m}", self._module_expr(sub)))
                        existing = self.tensor_input(var, t, f"{label}.{prefix + '.' if prefix else ''}{name}")
                        proxies[id(t)] = existing
                    swaps.append((d, name, t))
                    d[name] = existing
        return swaps

    def _module_expr(self, sub) -> str:
        return self._trace_for_consts.const_expr(sub)

    def mutated_arguments(self) -> list[str]:
        """Argument lists/dicts the traced function changed: a cached trace cannot replay that."""
        changed = []
        for built, before, origin in self.containers:
            if type(built) is list:
                same = len(built) == len(before) and all(a is b for a, b in zip(built, before))
            else:
                same = built.keys() == before.keys() and all(built[k] is before[k] for k in before)
            if not same:
                changed.append(origin)
        return changed

    def hidden(self, fn, module=None) -> None:
        """Guard the globals, closure cells and module attributes the function's code can reach."""
        self.hidden_found = hidden_values(fn, module)
        self.guard_hidden(self.hidden_found)

    def unguard(self, slots, alternatives: dict) -> None:
        """Module attributes the call writes before reading them (`slots`: (module, name)): no guard on what
        they held, nor on what it reaches; a guard that a shared object got through one of them is made again
        through its other holder. The names of a module's __dict__ may also be those the trace's stores leave
        (`alternatives`: id(dict) -> keys)."""
        from dataclasses import replace

        ids = {(id(sub), name) for sub, name in slots}
        roots = {h.where for h in (b.args[0] for b in self.bsyms if b.symbol is CHECK_HIDDEN)
                 if h.kind == "attribute" and not h.path and (id(h.holder), h.key) in ids}

        def under(h) -> bool:
            return any(h.where == w or h.where.startswith((w + ".", w + "[")) for w in roots)

        kept = []
        for b in self.bsyms:
            h = b.args[0] if b.symbol is CHECK_HIDDEN else None
            if h is not None and under(h):
                self.hidden_guarded.discard((id(h.holder), h.key, h.path))
                continue
            if h is not None and h.check == "dict" and h.key == "__dict__" and id(h.value) in alternatives:
                b = BoundSymbol(CHECK_HIDDEN, (replace(h, shape=(*h.shape, alternatives[id(h.value)])),), {}, None)
            kept.append(b)
        self.bsyms[:] = kept
        self.guard_hidden([h for h in getattr(self, "hidden_found", ()) if not under(h)])

    def guard_hidden(self, values) -> None:
        """Guard these HiddenValues (expanded), skipping any slot already guarded."""
        for h in values:
            key = (id(h.holder), h.key, h.path)
            if key not in self.hidden_guarded:
                self.hidden_guarded.add(key)
                self._emit(CHECK_HIDDEN, h)

    def finish(self, captured, grad_enabled) -> Trace:
        tr = self._trace_for_consts
        if len(self.arg_tensors) > 1:  # distinct tensor arguments must stay distinct objects
            self._emit(CHECK_DISTINCT, tuple(var for _, var in self.arg_tensors.values()))
        if self.sharing_guard is not None:
            self._emit(CHECK_SHARING, *self.sharing_guard)
        for real, proxy in captured:
            var = tr.const_expr(real)
            self._emit(CHECK_TENSOR, var, TensorFacts(real))
            self.input_names.append(var)
        for c in self.state.constraints:
            if c.after_read is None:  # (one naming a number read from a tensor is checked after that read)
                self._emit(CHECK_CONSTRAINT, c)
        self._emit(CHECK_GLOBAL_STATE, grad_enabled, self.state.initial_torch_flags[0], self.state.default_device,
                   self.state.initial_autocast, self.state.initial_torch_flags)
        self._emit(RETURN_INPUTS, tuple(self.input_names))
        tr.bsyms = self.bsyms
        tr.args = ["args", "kwargs"]
        tr.header = "prologue: checks every assumption of the computation trace, returns its inputs or None"
        return tr


def new_prologue_trace() -> Trace:
    return Trace("prologue")
