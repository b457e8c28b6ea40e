"""Proxies: stand-ins for the user's values while a function is traced.

A TensorProxy carries the metadata eager PyTorch would see (shape, dtype, device, requires_grad, strides)
as a tensor on the "meta" device: running the real torch op on it gives exactly eager's output metadata,
including whether `reshape` returned a view (the layout fact behind TL101) and autograd's leaf rules.

Number proxies subclass int/float so that Python arithmetic and torch calls behave natively; under
"constant values" caching their value is guarded by the prologue. Under "symbolic values", their
subclasses in compiler/symbolic/ record arithmetic and turn decisions into prologue constraints.
"""
from __future__ import annotations

import operator
import types

import torch

from .context import current_state
from .errors import DataDependentError, Fallback, UnsupportedOpError
from .source import user_location

# Tensor properties that are ops (views): dispatched through these getters, registered in the torch table.
PROPERTY_GETTERS = {n: operator.attrgetter(n) for n in ("T", "mT", "H", "mH", "real", "imag")}

# Set by compiler.torchlang on import; proxies call it for every torch function/method/operator.
DISPATCH = None

# Symbolic sizes (cache="symbolic values") are compiler.symbolic's: it fills these in when it is imported, and a
# proxy has `sym_shape` only once it has been. So this layer needs nothing above it.
SYMBOLIC_SIZES = types.SimpleNamespace(
    read_shape=None,  # (proxy, reason) -> the sizes Python sees (SymInts), or None: the meta sizes are exact
    fix_sizes=None,  # (state, reason): specialize every symbolic input
    product=None,  # (sizes) -> their product, symbolic where they are
    specialize=None,  # (value, reason) -> the plain value of a symbolic one (a guard)
)


class Symbolic:
    """Base of compiler.symbolic's SymInt, SymFloat and SymBool: values that stay symbolic in a trace (printed
    by name, hashed by name in CSE keys). Below that layer, recognizing them is all that is needed."""

    __slots__ = ()


def _dispatch(func, args, kwargs=None):
    return DISPATCH(func, args, kwargs or {})


class Proxy:
    __slots__ = ()


class TensorProxy(Proxy):
    """A tensor seen at trace time. `meta` is a meta-device tensor with the same shape/strides/dtype."""

    __slots__ = ("name", "meta", "device", "producer", "origin", "dynamic", "is_parameter", "sym_shape", "attrs",
                 "__weakref__")

    def __init__(self, name: str, meta: torch.Tensor, device: torch.device, producer=None, origin=None,
                 dynamic: bool = False):
        self.name = name
        self.meta = meta
        self.device = device
        self.producer = producer  # the BoundSymbol that made it (None for inputs)
        self.origin = origin  # for inputs: where the value came from, e.g. "args[0]"
        # dynamic: its size depends on tensor values (x[mask]); the meta tensor holds a placeholder size, so
        # reading the size in Python raises instead of baking a wrong number into the trace.
        self.dynamic = dynamic
        self.is_parameter = False  # an input that is an nn.Parameter in the caller's world
        # cache="symbolic values": sizes as symbolic expressions (compiler.symbolic), UNKNOWN, or None (the
        # meta tensor's sizes are exact)
        self.sym_shape = None
        self.attrs = None  # attributes the traced code set on it (`y.foo = 42`): read back while tracing

    def __setattr__(self, name, value):
        if name in _OWN_SLOTS:
            object.__setattr__(self, name, value)
        elif name in ("real", "imag"):  # x.real = v writes into the real part, as eager's setter does
            part = getattr(self, name)
            _dispatch(torch.Tensor.copy_ if isinstance(value, TensorProxy) or isinstance(value, torch.Tensor)
                      else torch.Tensor.fill_, (part, value))
        elif name in ("data", "grad", "requires_grad", "names", "retains_grad"):  # autograd state: not an attribute
            loc = user_location(2)
            raise UnsupportedOpError(f"setting Tensor.{name} of a traced tensor is not supported"
                                     f"{f' at {loc.describe()}' if loc else ''}")
        else:  # a Python attribute (`y.foo = 42`): set on the real tensor by the trace, on every call
            if current_state() is None:
                raise AttributeError(f"cannot set {name!r} on {self.name} outside of tracing")
            _dispatch(set_tensor_attribute, (self, name, value))  # (an effect op: compiler/torchlang/ops.py)
            if self.attrs is None:
                object.__setattr__(self, "attrs", {})
            self.attrs[name] = value

    # Not a torch.Tensor subclass: isinstance(x, torch.Tensor) is False while tracing. Faking __class__
    # would fix isinstance but torch's C++ argument parser then takes the proxy for a real tensor and
    # crashes (torch.pow(x, 0.5)); the interpreter's lookasides for isinstance/type/is_tensor fix it.

    # --- metadata, answered from trace-time facts (guarded by the prologue) ---
    @property
    def shape(self):
        if self.dynamic:
            self._needs_data("reading the shape of a tensor whose size depends on values (e.g. x[mask])", "shape")
        if self.sym_shape is not None:
            made_by = getattr(getattr(self.producer, "symbol", None), "name", None)
            made_by = f" (made by {made_by})" if made_by else ""
            sizes = SYMBOLIC_SIZES.read_shape(self, f"the size of {self.name}{made_by}, which no shape rule follows, is read")
            if sizes is not None:
                return torch.Size(sizes)
        return self.meta.shape

    dtype = property(lambda self: self.meta.dtype)
    ndim = property(lambda self: self.meta.ndim)
    requires_grad = property(lambda self: self.meta.requires_grad)
    is_leaf = property(lambda self: self.meta.is_leaf)
    is_cuda = property(lambda self: self.device.type == "cuda")
    is_cpu = property(lambda self: self.device.type == "cpu")
    is_meta = property(lambda self: self.device.type == "meta")
    layout = property(lambda self: self.meta.layout)
    # Read-only facts that follow from the layout and dtype (traced tensors are plain strided tensors).
    is_nested = property(lambda self: False)
    is_sparse = property(lambda self: self.meta.is_sparse)
    is_sparse_csr = property(lambda self: self.meta.is_sparse_csr)
    is_quantized = property(lambda self: self.meta.is_quantized)
    is_mkldnn = property(lambda self: False)
    itemsize = property(lambda self: self.meta.itemsize)
    nbytes = property(lambda self: self.numel() * self.meta.itemsize)
    is_xpu = property(lambda self: self.device.type == "xpu")
    is_mps = property(lambda self: self.device.type == "mps")
    T = property(lambda self: _dispatch(PROPERTY_GETTERS["T"], (self,)))
    mT = property(lambda self: _dispatch(PROPERTY_GETTERS["mT"], (self,)))
    H = property(lambda self: _dispatch(PROPERTY_GETTERS["H"], (self,)))
    mH = property(lambda self: _dispatch(PROPERTY_GETTERS["mH"], (self,)))
    real = property(lambda self: _dispatch(PROPERTY_GETTERS["real"], (self,)))
    imag = property(lambda self: _dispatch(PROPERTY_GETTERS["imag"], (self,)))

    @property
    def grad(self):
        # An input's .grad is an input too (the prologue fetches it each call); an intermediate has none yet.
        state = current_state()
        if state is None or state.builder is None or self.name not in state.real_inputs:
            loc = user_location(2)
            raise UnsupportedOpError(f"Tensor.grad of {self.name}, which is not an input of the jitted function, "
                                     f"is not supported{f' at {loc.describe()}' if loc else ''}")
        return state.builder.grad_of(self)

    def size(self, dim=None):
        shape = self.shape  # raises for value-dependent sizes; symbolic under cache="symbolic values"
        if dim is None:
            return shape
        if not isinstance(dim, int):
            raise TypeError(f"size(): argument 'dim' must be int, not {type(dim).__name__}")
        if dim < -len(shape) or dim >= len(shape):
            return self.meta.size(dim)  # eager's IndexError
        return shape[dim]

    def _fixed_layout(self, what):
        if self.sym_shape is not None:  # strides and contiguity follow from the sizes: decide them
            state = current_state()
            if state is not None and getattr(state, "symbolic", False) and not state.sizes_fixed:
                SYMBOLIC_SIZES.fix_sizes(state, what)

    def stride(self, dim=None):
        self.shape  # noqa: B018
        self._fixed_layout("strides are read")
        if any(s <= 1 for s in self.meta.shape):  # eager's kernels choose the strides of such dims freely, and
            strides = self._real_strides()       # not always as the meta kernels do: read them from the run
            if strides is not None:
                return strides if dim is None else strides[dim]
        return self.meta.stride() if dim is None else self.meta.stride(dim)

    def _real_strides(self):
        """The strides of the real tensor (a read, which splits the trace), for a tensor the trace computes;
        None where they are the meta's (an argument's or a captured tensor's: guarded) or cannot be read."""
        state = current_state()
        segmenter = getattr(state, "segmenter", None)
        if segmenter is None or self.name in state.real_inputs or any(p is self for _, p in state.captured):
            return None
        ok, value = segmenter.read(self, "stride", "reading the strides of a tensor with a dim of size 0 or 1",
                                   user_location(3))
        return tuple(value) if ok else None

    def dim(self):
        return self.meta.dim()

    def numel(self):
        shape = self.shape
        if self.sym_shape is None or all(type(d) is int for d in shape):
            return self.meta.numel()
        return SYMBOLIC_SIZES.product(shape)

    nelement = numel
    ndimension = dim

    def untyped_storage(self):
        """What a traced tensor's storage can tell without memory: its size in bytes and device."""
        return StorageFacts(self)

    def element_size(self):
        return self.meta.element_size()

    def is_contiguous(self, memory_format=torch.contiguous_format):
        self.shape  # noqa: B018 - a value-dependent size is read first: the real tensor's layout decides
        self._fixed_layout("is_contiguous() is read")
        return self.meta.is_contiguous(memory_format=memory_format)

    def is_floating_point(self):
        return self.meta.is_floating_point()

    def is_complex(self):
        return self.meta.is_complex()

    def get_device(self):
        return -1 if self.device.type == "cpu" else (self.device.index or 0)

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        n = self.shape[0]
        if type(n) is not int:  # len() would turn a symbolic size into a plain int silently (the
            n = SYMBOLIC_SIZES.specialize(n, "len() of a tensor")  # interpreter looks len() aside: it stays)
        return n

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        if self.sym_shape is not None:  # the number of rows is a decision
            SYMBOLIC_SIZES.specialize(self.shape[0], "iterating over a tensor")
        return iter(_dispatch(torch.Tensor.unbind, (self, 0)))

    def __repr__(self):
        shape = "value-dependent" if self.dynamic else tuple(self.meta.shape)
        return f"<TensorProxy {self.name} shape={shape} dtype={self.dtype} device={self.device}>"

    __hash__ = object.__hash__

    # Values are unknown at trace time. Under compiler.jit the trace is split here and the value is read
    # from the real tensor (compiler.segments); elsewhere these raise a clear error.
    def _needs_data(self, what, kind, number=False):
        loc = user_location(4 if number else 3)
        state = current_state()
        segmenter = getattr(state, "segmenter", None)
        if getattr(state, "symbolic", False) and segmenter is None:  # no segments: trace again with constants
            raise Fallback(what)
        if segmenter is not None:
            # number: the caller hands the result to Python code (never to native code that would read a
            # symbolic number's value silently), so under symbolic values it may stay symbolic
            ok, value = segmenter.read(self, kind, what, loc, number)
            if ok:
                return value
        where = f" at {loc.describe()}" if loc else ""
        err = DataDependentError(
            f"{what} needs the values of tensor {self.name}{where}; the compiler traces with metadata only. "
            "Keep the computation in tensors (e.g. torch.where) or move it outside the jitted function."
        )
        err.location = loc
        raise err

    def __bool__(self):
        return self._needs_data("bool(tensor) (an `if`/`while`/`and`/`or` on a tensor)", "bool")

    def __int__(self):
        return self._needs_data("int(tensor)", "int")

    def __float__(self):
        return self._needs_data("float(tensor)", "float")

    def __complex__(self):
        return self._needs_data("complex(tensor)", "complex")

    def __index__(self):
        return self._needs_data("using a tensor as an index", "index")

    def __str__(self):  # print(x), f"{x}": eager prints the values
        self._needs_data("str(tensor) (printing or formatting a tensor)", "str")

    def __format__(self, spec):
        self._needs_data("formatting a tensor", "format")

    def item(self):
        return self._read_number("tensor.item()", "item")

    def _read_number(self, what, kind):
        return self._needs_data(what, kind, number=True)

    def tolist(self):
        return self._needs_data("tensor.tolist()", "tolist")

    def numpy(self, *, force=False):
        return self._needs_data("tensor.numpy()", "numpy_force" if force else "numpy")

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return _dispatch(func, args, kwargs)

    def type(self, dtype=None, non_blocking=False, **kwargs):
        if dtype is None:  # the type name, e.g. "torch.cuda.FloatTensor": a fact, not an op
            with torch._C.DisableTorchFunction():
                name = torch.empty(0, dtype=self.dtype).type()
            return name.replace("torch.", f"torch.{self.device.type}.", 1) if self.device.type != "cpu" else name
        return _dispatch(torch.Tensor.type, (self, dtype, non_blocking), kwargs)

    def __getattr__(self, name):
        attrs = object.__getattribute__(self, "attrs") if name != "attrs" else None
        if attrs and name in attrs:
            return attrs[name]
        # Any other tensor method: route the real torch.Tensor method through the symbol table, so the
        # table decides (unsupported -> UnsupportedOpError naming the op and the user's line).
        method = getattr(torch.Tensor, name, None)
        if method is not None and not callable(method):  # .data, .grad, ._version...: state, not ops
            loc = user_location(2)
            raise UnsupportedOpError(f"Tensor.{name} is not supported by the thunder-lint compiler"
                                     f"{f' at {loc.describe()}' if loc else ''}")
        if method is None:
            raise AttributeError(f"'Tensor' object has no attribute '{name}' (tracing {self.name})")

        def bound(*args, **kwargs):
            return _dispatch(method, (self, *args), kwargs)

        bound.__name__ = name
        return bound


def _binary(name):
    method = getattr(torch.Tensor, name)

    def op(self, other):
        return _dispatch(method, (self, other))

    op.__name__ = name
    return op


def _unary(name):
    method = getattr(torch.Tensor, name)

    def op(self):
        return _dispatch(method, (self,))

    op.__name__ = name
    return op


for _n in (
    "__add__ __radd__ __iadd__ __sub__ __rsub__ __isub__ __mul__ __rmul__ __imul__ __truediv__ __rtruediv__ "
    "__itruediv__ __floordiv__ __rfloordiv__ __ifloordiv__ __mod__ __rmod__ __imod__ __pow__ __rpow__ __ipow__ "
    "__matmul__ __rmatmul__ __and__ __rand__ __iand__ __or__ __ror__ __ior__ __xor__ __rxor__ __ixor__ "
    "__lshift__ __rshift__ __eq__ __ne__ __lt__ __le__ __gt__ __ge__ __getitem__"
).split():
    setattr(TensorProxy, _n, _binary(_n))
for _n in "__neg__ __pos__ __abs__ __invert__".split():
    setattr(TensorProxy, _n, _unary(_n))
TensorProxy.__hash__ = object.__hash__


def _setitem(self, key, value):
    _dispatch(torch.Tensor.__setitem__, (self, key, value))


TensorProxy.__setitem__ = _setitem


_OWN_SLOTS = frozenset(TensorProxy.__slots__)


def set_tensor_attribute(t, name, value):
    """`t.name = value` for a Python attribute of a tensor (the op the trace records for it)."""
    setattr(t, name, value)


class StorageFacts:
    """`x.untyped_storage()` of a traced tensor: its size (what the meta tensor's view spans; a tensor the
    function made owns exactly that) and device. Its address and contents are values: reading them raises."""

    def __init__(self, proxy):
        self._proxy = proxy

    def nbytes(self):
        p = self._proxy
        base = p.meta._base if p.meta._base is not None else p.meta
        state = current_state()
        held = [q.meta for q in getattr(state, "inputs", ()) if isinstance(q, TensorProxy)] + \
            [q.meta for _, q in getattr(state, "captured", ())]
        if any(m is base or m._base is base for m in held):  # (an argument's storage may be larger than its view)
            loc = user_location(2)
            raise UnsupportedOpError("untyped_storage() of an argument or captured tensor (or a view of one) is not "
                                     f"supported: its storage is not guarded{f' at {loc.describe()}' if loc else ''}")
        if p.sym_shape is not None:
            p._fixed_layout("the storage size is read")
        with torch._C.DisableTorchFunction():
            return p.meta.untyped_storage().nbytes()

    size = nbytes

    @property
    def device(self):
        return self._proxy.device

    def element_size(self):
        return 1

    def __getattr__(self, name):
        loc = user_location(2)
        raise UnsupportedOpError(f"untyped_storage().{name} of a traced tensor is not supported (its memory exists "
                                 f"only when the trace runs){f' at {loc.describe()}' if loc else ''}")


class OpaqueProxy(Proxy):
    """An input passed to the computation by reference, untouched (a torch.Generator): a parameter of the
    trace, fetched fresh by the prologue on every call so that its state is the caller's."""

    __slots__ = ("name", "value", "origin")

    def __init__(self, name: str, value, origin: str):
        self.name, self.value, self.origin = name, value, origin

    def __repr__(self):
        return f"<OpaqueProxy {self.name} {type(self.value).__qualname__}>"


class NumberProxy:
    """Mixin for number inputs: the value is real (int/float subclass), the name records where it came from."""

    __slots__ = ()

    def __repr__(self):
        return f"{type(self).__name__}({self.name}={self.value!r})"


class IntegerProxy(NumberProxy, int):

    def __new__(cls, name: str, value: int):
        obj = int.__new__(cls, value)
        obj.name = name
        return obj

    @property
    def value(self) -> int:
        return int(self)


class FloatProxy(NumberProxy, float):

    def __new__(cls, name: str, value: float):
        obj = float.__new__(cls, value)
        obj.name = name
        return obj

    @property
    def value(self) -> float:
        return float(self)


# bool cannot be subclassed: bool inputs are passed as plain bools and guarded by value.
BOOL_PROXY_NOTE = "bool inputs are plain bools guarded by value"


def unwrap_number(x):
    """NumberProxy -> its plain value (what a cached trace may bake in under constant-values caching)."""
    if isinstance(x, IntegerProxy):
        return int(x)
    if isinstance(x, FloatProxy):
        return float(x)
    return x
