"""Conservative classification of a jitted function's values: tensors, symbolic scalars, metadata."""

from __future__ import annotations

import ast

from ._call_sites import NOT_NONE, UNKNOWN, call_arguments, dead_spans, fixed_parameters
from ._tensor_attributes import TENSOR_ATTRIBUTES
from ._torch_api import METADATA_ATTRIBUTES, METADATA_METHODS, is_none_check
from .statements import nested_statements
from .walks import line_roots, lines_with, nodes
from .dotted import chain_root, dotted_name

_SCALAR_ANNOTATIONS = frozenset({"int", "float", "complex", "SymInt", "SymFloat"})
# torch.* functions that return Python values or objects, not tensors.
_TORCH_NON_TENSOR = ("torch.is_", "torch.Size", "torch.cuda", "torch.jit", "torch.compiler", "torch.get_",
                     "torch.backends", "torch.distributed", "torch.finfo", "torch.iinfo", "torch.device",
                     "torch.dtype", "torch.no_grad", "torch.enable_grad", "torch.autocast", "torch._", "torch.set_",
                     "torch.sym_")
# torch.* functions whose result is a Python value (a number, a dtype, a shape, a bool, a callable): checked against
# torch by tests/rules/test_torch_python_results.py. `torch.numel(x)` is an int, as `x.numel()` is.
TORCH_PYTHON_RESULTS = frozenset({"torch.numel", "torch.result_type", "torch.promote_types", "torch.can_cast",
                                  "torch.broadcast_shapes", "torch.typename", "torch.manual_seed", "torch.seed",
                                  "torch.initial_seed", "torch.are_deterministic_algorithms_enabled",
                                  "torch.use_deterministic_algorithms", "torch.compile", "torch.vmap"})
_SHAPE_FUNCTIONS = frozenset({"len"})
# NumPy functions whose result is metadata or a Python value, whatever array they are given.
_NUMPY_PYTHON_RESULTS = frozenset({"numpy.shape", "numpy.ndim", "numpy.size", "numpy.result_type", "numpy.dtype",
                                   "numpy.isscalar", "numpy.iscomplexobj", "numpy.isrealobj", "numpy.array_equal",
                                   "numpy.allclose", "numpy.array_equiv"})
# Builtins that copy a shape into another container: its items stay the same symbolic sizes.
_SHAPE_COPIES = frozenset({"tuple", "list"})
_DTYPES = frozenset({"float", "float32", "float64", "double", "half", "float16", "bfloat16", "int", "int8", "int16",
                     "int32", "int64", "long", "uint8", "uint16", "bool", "complex64", "complex128"})
# Attributes only tensors have (lists, dicts and numbers have none of them).
_TENSOR_ONLY_ATTRIBUTES = frozenset({"sum", "mean", "any", "all", "item", "view", "reshape", "shape", "dtype",
                                     "device", "transpose", "permute", "contiguous", "clone", "detach", "unsqueeze",
                                     "squeeze", "numel", "dim", "ndim", "float", "masked_fill", "softmax", "matmul"})
# Methods that mark an untyped parameter as a tensor: lists, dicts, strings and numbers have none of them.
_TENSOR_PARAM_METHODS = frozenset({"sum", "mean", "any", "all", "item", "tolist", "max", "min", "abs", "view",
                                   "reshape", "float", "to", "transpose", "permute", "t", "contiguous", "clone",
                                   "detach", "unsqueeze", "squeeze", "matmul", "softmax", "flatten", "expand", "norm",
                                   "pow", "exp", "sqrt", "rsqrt", "sigmoid", "tanh", "relu", "clamp", "topk",
                                   "argmax", "argmin", "masked_fill", "new_zeros", "new_ones", "new_empty",
                                   "new_full", "var", "std", "cumsum", "gather", "type_as", "chunk"})
_SCALAR_FUNCTIONS = frozenset({"int", "float", "abs", "min", "max", "round", "sum"})
# Builtins that, given one tensor, give a tensor: `sum(t)` adds its items, `max(t)` compares them.
_TENSOR_REDUCERS = frozenset({"sum", "abs", "max", "min"})
# Builtins whose result is a Python value whatever their arguments (`list(t)` is a list, even of tensors).
_PYTHON_BUILTINS = frozenset({"list", "tuple", "dict", "set", "frozenset", "sorted", "str", "repr", "len", "range",
                              "zip", "enumerate", "int", "float", "bool", "round", "isinstance", "getattr", "type"})
# Types that `isinstance(x, ...)` names when x is a Python value, never a tensor.
_PYTHON_TYPES = frozenset({"int", "float", "bool", "complex", "str", "bytes", "list", "tuple", "dict", "set",
                           "frozenset", "numbers.Number", "numbers.Real", "numbers.Integral", "numbers.Complex",
                           "numpy.ndarray", "numpy.number", "numpy.generic", "torch.SymInt", "torch.SymFloat",
                           "torch.SymBool", "torch.dtype", "torch.device", "torch.Size"})
# jaxtyping-style annotations: `Float[Tensor, "b n"]` is a tensor of that dtype and shape.
_SHAPED = frozenset({"Float", "Int", "Bool", "Shaped", "Num", "Real", "Inexact", "Integer", "UInt", "Complex",
                     "Float32", "Float16", "BFloat16", "Float64", "Int64", "Int32", "Int8", "UInt8"})
# Returns of torch calls that give a Python bool by reading the data: a data read of their own.
DATA_READ_FUNCTIONS = frozenset({"torch.equal", "torch.allclose", "torch.is_nonzero"})
DATA_READ_METHODS = frozenset({"item", "tolist", "numpy", "equal", "allclose", "is_nonzero"})


def is_tensor_annotation(ann) -> bool:
    """``torch.Tensor``, ``Optional[Tensor]``, ``FloatTensor | None``; not ``list[Tensor]``."""
    if isinstance(ann, ast.Name):
        return ann.id.endswith("Tensor")
    if isinstance(ann, ast.Attribute):
        return ann.attr.endswith("Tensor")
    if isinstance(ann, ast.Subscript) and isinstance(ann.value, (ast.Name, ast.Attribute)):
        outer = ann.value.id if isinstance(ann.value, ast.Name) else ann.value.attr
        if outer in _SHAPED and isinstance(ann.slice, ast.Tuple) and ann.slice.elts:
            return is_tensor_annotation(ann.slice.elts[0])
        return outer == "Optional" and is_tensor_annotation(ann.slice)
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        return is_tensor_annotation(ann.left) or is_tensor_annotation(ann.right)
    return False


def not_a_tensor_annotation(ann) -> bool:
    """An annotation that names something else than a tensor (`list[int]`, `torch.dtype`, `int`, `str`)."""
    return ann is not None and not is_tensor_annotation(ann) and not (
        isinstance(ann, ast.Constant) and isinstance(ann.value, str) and "Tensor" in ann.value)


def _annotation_name(ann) -> str:
    """The annotation's source as ``ast.unparse`` writes it; a name as it is, and the unparsed text kept on the
    node (unparse is slow, and every rule that classifies a function's parameters asks)."""
    if ann is None:
        return ""
    if type(ann) is ast.Name:
        return ann.id
    got = ann.__dict__.get("_thunder_unparsed")
    if got is None:
        # `torch.Tensor`: a dotted name unparses as its parts joined by dots
        got = ann.__dict__["_thunder_unparsed"] = dotted_name(ann) or ast.unparse(ann)
    return got


def _loop_counter(name: str, loop) -> bool:
    """``name`` is the count of a `for` loop over ``range(...)`` or the index of one over ``enumerate(...)`` (the
    same name bound to a tensor elsewhere in the function is another value: kornia's `for octave, g in
    enumerate(pyramid)` before `octave = torch.cat(...)`)."""
    if not isinstance(loop, ast.For) or not isinstance(loop.iter, ast.Call) or not isinstance(loop.iter.func, ast.Name):
        return False
    target, func = loop.target, loop.iter.func.id
    if func == "range":
        return isinstance(target, ast.Name) and target.id == name
    if func == "enumerate":
        return isinstance(target, ast.Tuple) and bool(target.elts) and isinstance(target.elts[0], ast.Name) \
            and target.elts[0].id == name
    return False


def _tensor_names(ann):
    """The names in an annotation that `is_tensor_annotation` took for tensor types (`KeyedJaggedTensor`)."""
    for n in nodes(ann):  # (ast.walk's nodes, listed without its generator)
        if isinstance(n, ast.Name) and n.id.endswith("Tensor"):
            yield n
        elif isinstance(n, ast.Attribute) and n.attr.endswith("Tensor"):
            yield n


def _is_self(e) -> bool:
    return isinstance(e, ast.Name) and e.id == "self"


def _own_returns(func):
    """The `return` statements of ``func`` itself (not of functions nested in it)."""
    stack = list(func.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            yield node
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt) or hasattr(c, "body"))


# Buffers every module of these torch classes holds.
_NORM_BUFFERS = frozenset({"running_mean", "running_var", "num_batches_tracked"})
_TENSOR_MAKERS = ("torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer", "nn.Parameter")
# torch functions that build a tensor (an attribute bound to one holds a tensor; `torch.broadcast_shapes` does not)
_FACTORIES = frozenset({"tensor", "as_tensor", "zeros", "ones", "empty", "full", "arange", "linspace", "logspace",
                        "eye", "rand", "randn", "randint", "randperm", "zeros_like", "ones_like", "empty_like",
                        "full_like", "rand_like", "randn_like", "from_numpy", "stack", "cat", "Tensor", "LongTensor",
                        "FloatTensor", "BoolTensor", "IntTensor"})


def _tensor_attributes(ctx, cls) -> frozenset:
    """Attributes of ``cls`` that hold tensors: registered buffers and parameters, and `self.x = torch.zeros(...)`
    when every assignment of `self.x` in the class is a tensor (or None); a BatchNorm subclass's running stats."""
    tensor, other = set(), set()
    for base in cls.bases:
        name = ctx.resolve(base) or ""
        if name.startswith("torch.nn.") and ("BatchNorm" in name or "_NormBase" in name):
            tensor |= _NORM_BUFFERS
    # (sets: the order the class's nodes are met in does not matter, so statements and calls are looked up
    # separately instead of walking every expression of the class)
    for node in _register_calls_in(ctx, cls):
        key, value = node.args[0], node.args[1]
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            is_none = isinstance(value, ast.Constant) and value.value is None
            (other if not is_none and not _makes_tensor(ctx, value) and not isinstance(value, ast.Name)
             else tensor).add(key.value)
    stack = list(cls.body)
    while stack:
        node = stack.pop()
        stack.extend(nested_statements(node))
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Attribute) and _is_self(t.value):
                    if isinstance(node, ast.AnnAssign) and not_a_tensor_annotation(node.annotation):
                        other.add(t.attr)  # `self._batch_shape: torch.Size = ...`
                    elif _makes_tensor(ctx, node.value):
                        tensor.add(t.attr)
                    elif not (isinstance(node.value, ast.Constant) and node.value.value is None):
                        other.add(t.attr)
    return frozenset(tensor - other)


_REGISTER = ("register_buffer", "register_parameter")


def _register_calls_in(ctx, cls) -> list:
    """``self.register_buffer(name, value)`` / ``register_parameter`` calls inside ``cls`` (its methods, nested
    code and decorators included): the file's such calls, found in one walk of the file, within the class's span."""
    calls = ctx.__dict__.get("_register_calls")
    if calls is None:
        # only the statements on lines that say "register_" (its caller adds the calls to sets: order is no fact)
        lines = lines_with(ctx.source.text, "register_") if "register_" in ctx.source.text else []
        calls = ctx.__dict__["_register_calls"] = [
            n for root in (line_roots(ctx.tree, lines) if lines is not None else [ctx.tree]) for n in nodes(root)
            if type(n) is ast.Call and isinstance(n.func, ast.Attribute)
            and n.func.attr in _REGISTER and _is_self(n.func.value) and len(n.args) >= 2
        ]
    if not calls:
        return calls
    first = cls.decorator_list[0] if cls.decorator_list else cls
    lo, hi = (first.lineno, first.col_offset), (cls.end_lineno, cls.end_col_offset)
    return [n for n in calls if lo <= (n.lineno, n.col_offset) <= hi]


def _makes_tensor(ctx, e) -> bool:
    """`torch.zeros(...)`, `nn.Parameter(...)`, `torch.tensor(0)`: a call that certainly builds a tensor."""
    if not isinstance(e, ast.Call):
        return False
    name = ctx.resolve(e.func) or ""
    return name in _TENSOR_MAKERS or (name.startswith("torch.") and name[6:] in _FACTORIES)


_JIT_CALLS = frozenset({"torch.compile", "thunder.jit", "compiler.jit", "analyzer.jit"})
_JIT_LAST = frozenset(name.rpartition(".")[2] for name in _JIT_CALLS)


def compiled_call_tensors(ctx, info) -> frozenset:
    """Parameters of a module-level function that a call of its compiled form in this file passes a tensor:
    ``cf = torch.compile(f)`` then ``cf(torch.ones(1))``, ``torch.compile(f)(x)`` with ``x = torch.randn(3)``,
    ``[cf(b) for b in boxes]`` over ``boxes = [torch.randint(...) for _ in range(10)]``. A reporter's program and a
    script say so at the call; the function's own code may not (``def as_int(x): return int(x)``)."""
    if info.class_node is not None or isinstance(info.node, ast.Lambda):
        return frozenset()
    per_file = ctx.__dict__.setdefault("_compiled_call_tensors", {})
    got = per_file.get(id(info.node))
    if got is None:
        got = per_file[id(info.node)] = frozenset(_compiled_call_tensors(ctx, info))
    return got


def _compiled_call_tensors(ctx, info):
    sites = compile_sites(ctx)
    name = info.name
    handles = set(sites["handles"].get(name, ()))
    if any((ctx.resolve(d.func if isinstance(d, ast.Call) else d) or "") in _JIT_CALLS
           for d in getattr(info.node, "decorator_list", ())):
        handles.add(name)
    compiled_ids = sites["compiled"].get(name, set())
    if not handles and not compiled_ids:
        return ()
    bindings = _file_bindings(ctx)
    args = info.node.args
    params = [a.arg for a in (*args.posonlyargs, *args.args)]
    out = set()
    by_name = calls_by_name(ctx) if handles else {}
    calls = [c for h in handles for c in by_name.get(h, ())] + sites["direct"].get(name, [])
    for node in calls:
        if any(isinstance(a, ast.Starred) for a in node.args):
            continue
        for p, a in zip(params, node.args):
            if _tensor_argument(ctx, a, bindings):
                out.add(p)
        for k in node.keywords:
            if k.arg in params and _tensor_argument(ctx, k.value, bindings):
                out.add(k.arg)
    return out


def compile_sites(ctx) -> dict:
    """The file's jit calls of a name: "compiled" f -> ids of its jit calls (``torch.compile(f)``); "handles" f ->
    names bound to one (``cf = torch.compile(f)``); "direct" f -> calls of a jit call's result
    (``torch.compile(f)(x)``). Only the statements on lines that name a jit function are walked: every jit name
    ends in ``compile`` or ``jit``, or is an import alias of one (``from torch import compile as tc``), and a jit
    call's assignment and its direct call are parts of its statement."""
    got = ctx.__dict__.get("_compile_sites")
    if got is None:
        text = ctx.source.text
        words = {"compile", "jit"} | {h for h, target in ctx.index.imports.items() if target in _JIT_CALLS}
        lines: set[int] = set()
        for word in words:
            at = lines_with(text, word)
            if at is None:  # a text whose names a search may miss: the whole file
                roots = [ctx.tree]
                break
            lines.update(at)
        else:
            roots = line_roots(ctx.tree, sorted(lines))
        compiled, assigns, of_calls = {}, [], []
        Call, Name, Attribute = ast.Call, ast.Name, ast.Attribute
        for root in roots:
            for node in nodes(root):
                kind = type(node)
                if kind is Call:
                    func = node.func
                    if type(func) is Call:
                        of_calls.append(node)  # `torch.compile(f)(x)`: maybe a call of a jit call's result
                    if node.args and type(node.args[0]) is Name:
                        jit = func.func if type(func) is Call else func  # torch.compile(backend=...)(f)
                        # an attribute chain's last name is its resolved name's last
                        if (type(jit) is not Attribute or jit.attr in _JIT_LAST) and (ctx.resolve(jit) or "") in _JIT_CALLS:
                            compiled.setdefault(node.args[0].id, set()).add(id(node))
                elif kind is ast.Assign and type(node.value) is Call:
                    assigns.append(node)
        owner = {i: f for f, ids in compiled.items() for i in ids}
        handles, direct = {}, {}
        for a in assigns:
            f = owner.get(id(a.value))
            if f is not None:
                handles.setdefault(f, set()).update(t.id for t in a.targets if isinstance(t, ast.Name))
        for node in of_calls:
            if id(node.func) in owner:
                direct.setdefault(owner[id(node.func)], []).append(node)
        got = ctx.__dict__["_compile_sites"] = {"compiled": compiled, "handles": handles, "direct": direct}
    return got


def calls_by_name(ctx) -> dict:
    """name -> the file's calls of that name (``f(x)``): one walk of the file, on first need."""
    got = ctx.__dict__.get("_calls_by_name")
    if got is None:
        got = ctx.__dict__["_calls_by_name"] = {}
        for node in ast.walk(ctx.tree):
            if type(node) is ast.Call and type(node.func) is ast.Name:
                got.setdefault(node.func.id, []).append(node)
    return got


def _file_bindings(ctx) -> dict:
    """name -> the values the file assigns it, and the names its loops and comprehensions bind -> their iterables
    (every one of them must give a tensor); "__assign__" -> every (value, targets) assignment."""
    got = ctx.__dict__.get("_file_bindings")
    if got is None:
        got, assigns = {}, []
        for node in ast.walk(ctx.tree):
            if isinstance(node, ast.Assign):
                assigns.append((node.value, node.targets))
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        got.setdefault(t.id, []).append(("value", node.value))
            elif isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name):
                got.setdefault(node.target.id, []).append(("item", node.iter))
        got["__assign__"] = assigns
        ctx.__dict__["_file_bindings"] = got
    return got


def _tensor_argument(ctx, e, bindings, depth=0) -> bool:
    """An argument that certainly is a tensor: a torch factory call, or a name that every binding in the file makes
    one (or an item of a list of them)."""
    if _makes_tensor(ctx, e):
        return True
    if depth > 2 or not isinstance(e, ast.Name):
        return False
    bound = bindings.get(e.id, ())
    return bool(bound) and all(_bound_to_tensor(ctx, kind, value, bindings, depth) for kind, value in bound)


def _bound_to_tensor(ctx, kind, value, bindings, depth) -> bool:
    if kind == "value":
        return _tensor_argument(ctx, value, bindings, depth + 1)
    items = value  # a loop's or a comprehension's iterable: a list of tensors, or a name bound to one
    if isinstance(items, ast.Name):
        got = bindings.get(items.id, ())
        items = got[0][1] if len(got) == 1 and got[0][0] == "value" else None
    if isinstance(items, (ast.ListComp, ast.GeneratorExp)):
        return _makes_tensor(ctx, items.elt)
    if isinstance(items, (ast.List, ast.Tuple)):
        return bool(items.elts) and all(_makes_tensor(ctx, x) for x in items.elts)
    return False


def _cached(ctx, what: str, node, compute):
    """``compute(ctx, node)`` once per file: several rules build Values for the same function."""
    cache = ctx.__dict__.setdefault("_values_cache", {})
    key = (what, id(node))
    if key not in cache:
        cache[key] = compute(ctx, node)
    return cache[key]


def _block_span(body):
    return (body[0].lineno, body[0].col_offset), (body[-1].end_lineno, body[-1].end_col_offset)


def _foreign_uses(uses) -> bool:
    """Is a name used with a public attribute that ``torch.Tensor`` lacks (`.keys()`, `.variable_stride_per_key()`)?"""
    return any(not u.attr.startswith("_") and u.attr not in TENSOR_ATTRIBUTES for u in uses)


class Values:
    """Which names of one function are tensors, and which are symbolic scalars."""

    def __init__(self, ctx, info, facts, scalar_params: bool = True, tensor_args=(), follow_calls: bool = True):
        self.ctx = ctx
        self.info = info
        self.follow_calls = follow_calls  # False in a callee looked at for its returns: one level deep
        self._returns: dict = {}  # (callee node id, tensor arguments) -> does it return a tensor
        self._checking: set[str] = set()  # names whose bindings python_value is reading (no endless recursion)
        self.scalar_params = scalar_params  # False: scalar parameters are not symbolic (a function reached from
        # the compiled one gets them from its callers)
        self.facts = facts
        self._loop_nodes = None  # the function's loops, found on first use
        params = list(facts.params)
        if info.class_node is not None and params and params[0] in ("self", "cls"):
            params = params[1:]
        self.params = params
        self.tensors: set[str] = set()
        self.scalars: set[str] = set()
        # name -> spans where an `isinstance` check says it holds a Python value (`isinstance(t, float) and t != 1`)
        checks_types = any(isinstance(c.func, ast.Name) and c.func.id == "isinstance" or
                           isinstance(c.func, ast.Attribute) and c.func.attr == "is_tensor" for c in facts.calls)
        self.python_spans: dict[str, list] = self._narrowed() if checks_types else {}
        self._classify_params()
        self.tensors.update(p for p in tensor_args if p in params)  # a caller passes tensors there
        self.tensors.update(p for p in compiled_call_tensors(ctx, info) if p in params)  # so do calls of its compiled form
        # spans no call can reach: `if isinstance(v, torch.Tensor):` where every call passes a Python value for v
        # and parameters that every call in the file passes as a Python literal, never rebound here, hold no tensor
        self.dead_spans: list = []
        if follow_calls:
            calls = call_arguments(ctx, info)
            if calls:
                fixed = fixed_parameters(ctx, info, facts)
                self.tensors -= {p for p in fixed if all(c[p] is not UNKNOWN and c[p] is not NOT_NONE for c in calls)}
                self.dead_spans = dead_spans(ctx, info, facts)
        self.self_tensors = _cached(ctx, "tensor attributes", info.class_node, _tensor_attributes) \
            if info.class_node is not None else frozenset()
        self._classify_locals()
        self._propagate()

    # -- parameters ---------------------------------------------------------------------------------
    def _classify_params(self) -> None:
        facts = self.facts
        vararg = facts.node.args.vararg.arg if facts.node.args.vararg else None
        kwarg = facts.node.args.kwarg.arg if facts.node.args.kwarg else None
        called = {c.func.id for c in facts.calls if isinstance(c.func, ast.Name)}
        for p in self.params:
            if p in (vararg, kwarg) or p in called:
                continue  # (a parameter called, `m(x)`, is a module or a function, whatever attributes it has)
            ann = _annotation_name(facts.annotations.get(p))
            uses = facts.attribute_uses.get(p, [])
            if self._another_class(facts.annotations.get(p), uses):
                continue  # `features: KeyedJaggedTensor` with `features.keys()`: an object, not a tensor
            if not_a_tensor_annotation(facts.annotations.get(p)) and not ann.startswith(("Any", "typing.Any")):
                if ann.split("[")[-1].rstrip("]").split("|")[0].strip() in _SCALAR_ANNOTATIONS or ann in _SCALAR_ANNOTATIONS:
                    self._scalar_param(p)
                continue  # `dtype: torch.dtype` has `.is_floating_point` too: the annotation says what it is
            default = facts.defaults.get(p)
            if default is not None and self._is_dtype(default):
                continue  # `dtype=torch.float`: a dtype
            if is_tensor_annotation(facts.annotations.get(p)) or any(
                u.attr in METADATA_ATTRIBUTES or u.attr in METADATA_METHODS or u.attr in _TENSOR_PARAM_METHODS
                or (u.attr.endswith("_") and not u.attr.startswith("_")) for u in uses
            ):
                self.tensors.add(p)
                continue
            if ann:
                if ann.split("[")[-1].rstrip("]").split("|")[0].strip() in _SCALAR_ANNOTATIONS or ann in _SCALAR_ANNOTATIONS:
                    self._scalar_param(p)
                continue
            default = facts.defaults.get(p)
            if default is not None and isinstance(default, ast.Constant) and isinstance(default.value, (bool, str)):
                continue  # flags and modes are specialized by every compiler
            if uses or p in facts.subscript_uses:
                continue  # an object or a container
            self._scalar_param(p)

    def _scalar_param(self, p: str) -> None:
        if self.scalar_params:
            self.scalars.add(p)

    def _is_dtype(self, e) -> bool:
        name = self.ctx.resolve(e) or ""
        return name.startswith("torch.") and name.rsplit(".", 1)[-1] in _DTYPES

    def _another_class(self, ann, uses) -> bool:
        """Is a parameter an object of some other class, though its annotation or its uses look like a tensor's?
        Its annotation names a class of this module that is no tensor subclass, or (unless the annotation is
        torch's own) it is used with an attribute tensors lack (a jagged-tensor container's `.keys()`)."""
        names = list(_tensor_names(ann)) if ann is not None else []
        if names and all((self.ctx.resolve(n) or "").startswith("torch.") for n in names):
            return False  # `torch.Tensor`, `Tensor` from torch, `DTensor`: torch's tensors, whatever they are used with
        for n in names:
            cls = self.ctx.index.classes.get(n.id) if isinstance(n, ast.Name) else None
            if cls is not None and not any(is_tensor_annotation(b) for b in cls.bases):
                return True
        return _foreign_uses(uses)

    def _classify_locals(self) -> None:
        """Locals used like tensors (``y.sum()``, ``y.view(...)``) are tensors, unless every value they are bound
        to is a Python one (`grid = np.array(x.shape)`: a NumPy array has `.any()` too) or they are used with an
        attribute tensors lack."""
        for name, uses in self.facts.attribute_uses.items():
            if name in self.params or name not in self.facts.bindings:
                continue
            if any(u.attr in _TENSOR_ONLY_ATTRIBUTES for u in uses) and not _foreign_uses(uses) \
                    and not self._python_bindings(name):
                self.tensors.add(name)

    def _python_bindings(self, name: str) -> bool:
        """Is every value ``name`` is bound to a Python value (a literal, a builtin's or NumPy's result)?"""
        bindings = self.facts.bindings.get(name, ())
        return bool(bindings) and all(b.kind == "assign" and b.value is not None and self.python_value(b.value)
                                      for b in bindings)

    def python_value(self, e) -> bool:
        """A value no tensor can be: literals, comprehensions, f-strings, a builtin's or NumPy's result."""
        if isinstance(e, (ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.DictComp,
                          ast.SetComp, ast.JoinedStr)):
            return True
        if isinstance(e, ast.BinOp):  # `np.array(x.shape) % 8`: both sides Python (`x * 2.0` may be a tensor)
            return self._python_operand(e.left) and self._python_operand(e.right)
        if isinstance(e, ast.Call):
            if isinstance(e.func, ast.Attribute) and e.func.attr in DATA_READ_METHODS:
                return True  # `a = x.cpu().numpy()`: the read is the finding; `a` holds Python/NumPy values
            if isinstance(e.func, ast.Name) and e.func.id in _PYTHON_BUILTINS:
                return not self.facts.is_local(e.func.id) and e.func.id not in self.ctx.index.bindings
            return (self.ctx.resolve(e.func) or "").startswith("numpy.") and not self._numpy_of_tensors(e)
        return False

    def python_operand(self, e) -> bool:
        """Is ``e`` a Python (or NumPy) value: one ``python_value`` says so, or a name every binding of which is?"""
        return self._python_operand(e)

    def _python_operand(self, e) -> bool:
        if self.python_value(e):
            return True
        if isinstance(e, ast.Name) and e.id not in self.params and e.id not in self._checking:
            self._checking.add(e.id)  # (a name bound from itself, `n = n * 2`, must not recurse forever)
            try:
                return self._python_bindings(e.id)
            finally:
                self._checking.discard(e.id)
        return False

    def _numpy_of_tensors(self, call) -> bool:
        """A NumPy routine given a tensor or an array argument (`np.logical_xor(clause, table[i])`): torch.compile
        traces it as tensor ops (torch._numpy), so its result is tensor data, not a Python value."""
        name = self.ctx.resolve(call.func) or ""
        return name.startswith("numpy.") and name not in _NUMPY_PYTHON_RESULTS \
            and any(self.is_tensor(a) for a in call.args if not isinstance(a, ast.Starred))

    # -- propagation through assignments ------------------------------------------------------------
    def _propagate(self) -> None:
        for _ in range(3):
            changed = False
            for name, bindings in self.facts.bindings.items():
                for b in bindings:
                    if b.kind == "assign" and b.value is None and isinstance(b.stmt, ast.Assign):
                        # `bsz, q_len, _ = x.size()`: every name unpacked from a shape is a symbolic size
                        if name not in self.scalars and self._is_shape(b.stmt.value):
                            self.scalars.add(name)
                            changed = True
                        continue
                    if b.kind == "loop" and name not in self.tensors and self.is_tensor(b.value):
                        self.tensors.add(name)  # `for a, b in aspect_ratio:` over a tensor: each item is a tensor
                        changed = True
                        continue
                    if b.kind != "assign" or b.value is None:
                        continue
                    if name not in self.tensors and self.is_tensor(b.value):
                        self.tensors.add(name)
                        changed = True
                    elif name not in self.scalars and name not in self.tensors and self.is_symbolic(b.value):
                        self.scalars.add(name)
                        changed = True
            if not changed:
                break

    # -- expressions --------------------------------------------------------------------------------
    def is_tensor(self, e, pos=None) -> bool:
        """Is ``e`` a tensor? With ``pos`` (where ``e`` is evaluated), a name whose value there is a parameter
        annotated as something else (`gt_groups: list[int]`, rebound to a tensor only further down) is not."""
        if isinstance(e, ast.Name):
            if e.id not in self.tensors:
                return False
            return pos is None or not (self._non_tensor_param_at(e.id, pos) or self._narrowed_at(e.id, pos)
                                       or self._python_binding_at(e.id, pos))
        if isinstance(e, ast.Call):
            name = self.ctx.resolve(e.func) or ""
            if name.startswith("torch.") and not name.startswith(_TORCH_NON_TENSOR) and name.count(".") == 1 \
                    and name not in TORCH_PYTHON_RESULTS:
                return True
            if name in DATA_READ_FUNCTIONS:
                return False  # `torch.equal(a, b)` is a Python bool
            if self._numpy_of_tensors(e):
                return True  # `np.count_nonzero(res)` on an array torch.compile traces
            if isinstance(e.func, ast.Attribute):
                attr = e.func.attr
                if attr in METADATA_METHODS or attr in DATA_READ_METHODS or attr.startswith("is_"):
                    return False
                if self.follow_calls and _is_self(e.func.value) and self.info.class_node is not None:
                    return self._returns_tensor(e, self._method(attr))  # `any_done = self._done(x)`
                return self.is_tensor(e.func.value, pos)
            if self.follow_calls and isinstance(e.func, ast.Name) and not self.facts.is_local(e.func.id) \
                    and self.ctx.index.bindings.get(e.func.id) == ["def"]:
                funcs = self.ctx.index.top_functions.get(e.func.id, ())
                if len(funcs) == 1:
                    return self._returns_tensor(e, funcs[0])  # `m = compute_mask(x)`: the project's own function
            if isinstance(e.func, ast.Name) and e.func.id in _TENSOR_REDUCERS and len(e.args) == 1 and not e.keywords:
                return self.is_tensor(e.args[0], pos)  # `sum(lengths)` over a tensor adds up tensors
            return False
        if isinstance(e, ast.BoolOp):
            return any(self.is_tensor(v, pos) for v in e.values)  # `flag or (x >= c)` may be the tensor
        if isinstance(e, ast.BinOp):
            return self.is_tensor(e.left, pos) or self.is_tensor(e.right, pos)
        if isinstance(e, ast.UnaryOp):
            return not isinstance(e.op, ast.Not) and self.is_tensor(e.operand, pos)
        if isinstance(e, ast.Compare):
            if is_none_check(e):
                return False
            return any(self.is_tensor(x, pos) for x in [e.left, *e.comparators])
        if isinstance(e, ast.Subscript):
            return self.is_tensor(e.value, pos)
        if isinstance(e, ast.Attribute):
            if isinstance(e.value, ast.Name) and e.value.id == "self" and "self" not in self.facts.bindings:
                return e.attr in self.self_tensors  # a buffer or parameter: `float(self.num_batches_tracked)`
            return e.attr in ("T", "mT", "real", "imag", "data", "grad") and self.is_tensor(e.value, pos)
        return False

    # -- what functions of this module return -------------------------------------------------------
    def _method(self, name: str):
        methods = _cached(self.ctx, "methods", self.info.class_node, lambda ctx, cls: {
            info.name: info for info in reversed(ctx.index.functions)
            if info.class_node is cls and info.parents[-1] is cls})
        return methods.get(name)

    def _returns_tensor(self, call, info) -> bool:
        """Does the function ``info`` (called by ``call``) return a tensor? Its return annotation says so, or
        every `return` in it gives one, with the arguments ``call`` passes as tensors taken as tensors there."""
        if info is None or isinstance(info.node, ast.Lambda):
            return False
        node = info.node
        if node.returns is not None:
            return is_tensor_annotation(node.returns) and not self._another_class(node.returns, ())
        params = [a.arg for a in node.args.posonlyargs + node.args.args]
        if info.class_node is not None and params:
            params = params[1:]
        passed = [p for p, a in zip(params, call.args) if not isinstance(a, ast.Starred) and self.is_tensor(a)]
        passed += [k.arg for k in call.keywords if k.arg and self.is_tensor(k.value)]
        key = (id(node), tuple(passed))
        if key not in self._returns:
            self._returns[key] = False  # (a recursive call)
            values = Values(self.ctx, info, self.ctx.facts(node), scalar_params=False, tensor_args=passed,
                            follow_calls=False)
            returns = [r.value for r in _own_returns(node)]
            self._returns[key] = bool(returns) and all(
                r is not None and values.is_tensor(r, (r.lineno, r.col_offset)) for r in returns)
        return self._returns[key]

    # -- isinstance narrowing -----------------------------------------------------------------------
    def _narrowed_at(self, name: str, pos) -> bool:
        return any(lo <= pos <= hi for lo, hi in self.python_spans.get(name, ()))

    def _narrowed(self) -> dict[str, list]:
        """Where `isinstance` says a name is a Python value: the operands after `isinstance(t, float) and`, the
        body of `if isinstance(t, (int, float)):`, the else of `if isinstance(t, torch.Tensor):` and, when that
        body returns, the rest of the function."""
        spans: dict[str, list] = {}
        func = self.facts.node
        for _, test in self.facts.tests:
            for op in ast.walk(test):
                if isinstance(op, ast.BoolOp):
                    narrow = self._python_when if isinstance(op.op, ast.And) else self._python_unless
                    for i, v in enumerate(op.values[:-1]):
                        name = narrow(v)
                        if name:
                            spans.setdefault(name, []).append(((op.values[i + 1].lineno, op.values[i + 1].col_offset),
                                                               (op.end_lineno, op.end_col_offset)))
        for node in self.facts.ifs:
            test = node.test
            ands = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
            ors = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) else [test]
            for name in filter(None, map(self._python_when, ands)):
                spans.setdefault(name, []).append(_block_span(node.body))
            for name in filter(None, map(self._python_unless, ors)):
                if node.orelse:
                    spans.setdefault(name, []).append(_block_span(node.orelse))
                if isinstance(node.body[-1], (ast.Return, ast.Raise)) and node in getattr(func, "body", ()):
                    spans.setdefault(name, []).append(((node.end_lineno, node.end_col_offset),
                                                       (func.end_lineno, func.end_col_offset)))
        return spans

    def _isinstance(self, e):
        """(name, "python" | "tensor") for `isinstance(name, T)` with T only Python types or only tensor types, and
        `torch.is_tensor(name)`."""
        if isinstance(e, ast.Call) and len(e.args) == 1 and isinstance(e.args[0], ast.Name) \
                and self.ctx.resolve(e.func) == "torch.is_tensor":
            return e.args[0].id, "tensor"
        if not (isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "isinstance"
                and len(e.args) == 2 and isinstance(e.args[0], ast.Name)):
            return None
        types = e.args[1].elts if isinstance(e.args[1], ast.Tuple) else [e.args[1]]
        kinds = set()
        for t in types:
            name = self.ctx.resolve(t) or ""
            if name in _PYTHON_TYPES:
                kinds.add("python")
            elif name.startswith("torch.") and is_tensor_annotation(t):
                kinds.add("tensor")
            else:
                return None
        return (e.args[0].id, kinds.pop()) if len(kinds) == 1 else None

    def _tensor_when(self, e) -> str | None:
        """The name that `isinstance(name, torch.Tensor)` being true says is a tensor."""
        found = self._isinstance(e)
        return found[0] if found and found[1] == "tensor" else None

    def _python_when(self, e) -> str | None:
        """The name that ``e`` being true says is a Python value."""
        negated = isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not)
        found = self._isinstance(e.operand if negated else e)
        return found[0] if found and (found[1] == "python") != negated else None

    def _python_unless(self, e) -> str | None:
        """The name that ``e`` being false says is a Python value."""
        negated = isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not)
        found = self._isinstance(e.operand if negated else e)
        return found[0] if found and (found[1] == "tensor") != negated else None

    def _python_binding_at(self, name: str, pos) -> bool:
        """Does ``name`` hold a Python value or a size at ``pos`` (`n = x.shape[0]` before `if t.numel() != n:`),
        though it is bound to a tensor elsewhere (`n = torch.sum(m)` further down)? Not where a loop around ``pos``
        binds it again: the next iteration may bring the tensor back."""
        bindings = self.facts.bindings.get(name, ())
        if len(bindings) < 2:
            return False
        b = self.facts.binding_at(name, pos)
        if getattr(b, "kind", "") != "assign" or b.value is None:
            return False
        value = b.value
        if not (self.python_value(value) or self._size_read(value)):
            return False
        for loop in self._loops():
            span = ((loop.lineno, loop.col_offset), (loop.end_lineno, loop.end_col_offset))
            if span[0] <= pos <= span[1] and any(o is not b and span[0] <= o.pos <= span[1] for o in bindings):
                return False
        return True

    def _loops(self) -> list:
        if self._loop_nodes is None:
            stack, self._loop_nodes = list(getattr(self.facts.node, "body", ())), []
            while stack:
                node = stack.pop()
                if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
                    self._loop_nodes.append(node)
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                    stack.extend(c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt))
        return self._loop_nodes

    def _non_tensor_param_at(self, name: str, pos) -> bool:
        return name in self.params and self.facts.binding_at(name, pos) == "param" and \
            not_a_tensor_annotation(self.facts.annotations.get(name))

    def is_tensor_at(self, e, pos) -> bool:
        """``is_tensor`` where names bound at ``pos`` to numbers read out of tensors (`h = h.item()`) are numbers."""
        if isinstance(e, ast.Name):
            return self.is_tensor(e, pos) and not self.python_number(e, pos)
        if isinstance(e, ast.BinOp):
            return self.is_tensor_at(e.left, pos) or self.is_tensor_at(e.right, pos)
        if isinstance(e, ast.UnaryOp):
            return not isinstance(e.op, ast.Not) and self.is_tensor_at(e.operand, pos)
        return self.is_tensor(e, pos)  # (`bool(v != first)` in the else of `if isinstance(first, Tensor):`)

    def python_number(self, e, pos) -> bool:
        """Is ``e`` a Python number at ``pos``: constants and names bound (there) to a value already read out of
        a tensor (`h = t.item()`) or computed from such values? Then converting it reads no tensor data."""
        if isinstance(e, ast.Constant):
            return isinstance(e.value, (int, float)) and not isinstance(e.value, bool)
        if isinstance(e, ast.BinOp):
            return self.python_number(e.left, pos) and self.python_number(e.right, pos)
        if isinstance(e, ast.UnaryOp):
            return self.python_number(e.operand, pos)
        if isinstance(e, ast.Name):
            b = self.facts.binding_at(e.id, pos)
            value = getattr(b, "value", None)
            if getattr(b, "kind", "") == "loop":
                return _loop_counter(e.id, b.stmt)
            if getattr(b, "kind", "") != "assign" or value is None:
                return False
            if isinstance(value, ast.Call):
                func = value.func
                if isinstance(func, ast.Attribute) and func.attr in ("item", "tolist") and not value.args:
                    return True
                if isinstance(func, ast.Name) and func.id in ("int", "float", "round", "len"):
                    return True
                return (self.ctx.resolve(func) or "").startswith("math.")
            return self.python_number(value, (value.lineno, value.col_offset)) if value is not e else False
        return False

    def _size_read(self, e) -> bool:
        """A size read out of a tensor's metadata, or arithmetic of such reads and constants (`x.shape[0]`,
        `x.size(1) * 2`, `t.numel()`, `len(x)`). Not any symbolic value: `x * 2.0` of a parameter may be a tensor."""
        if isinstance(e, ast.Constant):
            return isinstance(e.value, (int, float)) and not isinstance(e.value, bool)
        if isinstance(e, ast.BinOp):
            return self._size_read(e.left) and self._size_read(e.right)
        if isinstance(e, ast.UnaryOp):
            return self._size_read(e.operand)
        if isinstance(e, ast.Subscript):
            return self._is_shape(e.value) or self._is_shape(e)
        if isinstance(e, ast.Call):
            f = e.func
            if isinstance(f, ast.Attribute) and f.attr in ("size", "numel", "dim", "nelement", "ndimension"):
                return not self._is_self_attr(f.value)
            if isinstance(f, ast.Name) and f.id == "len" and not self.facts.is_local("len"):
                return True
        return self._is_shape(e)

    def _is_shape(self, e) -> bool:
        """``x.shape``, ``x.size()`` or a slice of them, for a non-``self`` tensor: a tuple of sizes."""
        if isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Slice):
            e = e.value
        if isinstance(e, ast.Attribute) and e.attr == "shape":
            return not self._is_self_attr(e)
        if isinstance(e, ast.Call) and not e.args and isinstance(e.func, ast.Attribute) and e.func.attr == "size":
            return not self._is_self_attr(e.func.value)
        return False

    def is_symbolic(self, e) -> bool:
        """A Python scalar (or shape) that a symbolic-values compile keeps symbolic."""
        if isinstance(e, ast.Name):
            return e.id in self.scalars
        if isinstance(e, ast.Attribute):
            return e.attr == "shape" and not self._is_self_attr(e)
        if isinstance(e, ast.Subscript):
            return self.is_symbolic(e.value)
        if isinstance(e, ast.Call):
            func = e.func
            if isinstance(func, ast.Attribute) and func.attr in ("size", "numel", "nelement"):
                return not self._is_self_attr(func.value)
            if isinstance(func, ast.Name) and func.id in _SHAPE_FUNCTIONS and e.args:
                return self.is_tensor(e.args[0])
            if isinstance(func, ast.Name) and func.id in _SHAPE_COPIES and len(e.args) == 1 \
                    and not self.facts.is_local(func.id):
                return self.is_symbolic(e.args[0])  # `tuple(a.shape)`: the same sizes, copied
            if isinstance(func, ast.Name) and func.id in _SCALAR_FUNCTIONS:
                return any(self.is_symbolic(a) for a in e.args)
            name = self.ctx.resolve(func) or ""
            if name.startswith("math."):
                return any(self.is_symbolic(a) for a in e.args)
            return False
        if isinstance(e, ast.BinOp):
            return (self.is_symbolic(e.left) or self.is_symbolic(e.right)) and not (
                self.is_tensor(e.left) or self.is_tensor(e.right)
            )
        if isinstance(e, ast.UnaryOp):
            return self.is_symbolic(e.operand)
        if isinstance(e, ast.Compare):
            if is_none_check(e):
                return False
            operands = [e.left, *e.comparators]
            if any(isinstance(x, ast.Constant) and isinstance(x.value, (str, bytes)) for x in operands):
                return False  # `mode == "same"`: a string is never symbolic
            return any(self.is_symbolic(x) for x in operands)
        if isinstance(e, ast.BoolOp):
            return any(self.is_symbolic(v) for v in e.values)
        if isinstance(e, (ast.Tuple, ast.List)):
            return any(self.is_symbolic(x) for x in e.elts)
        return False

    def decides_on_symbolic(self, test) -> bool:
        """Is a branch test decided by a symbolic value? A bare flag (`if use_bias:`) is not, unless it is a
        number by annotation: untyped flags are usually bools, which compilers specialize."""
        bare = test.operand if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) else test
        if isinstance(bare, ast.Name) and bare.id in self.params:
            ann = _annotation_name(self.facts.annotations.get(bare.id))
            return self.is_symbolic(bare) and any(t in ann for t in ("int", "float"))
        if isinstance(test, ast.BoolOp):
            return any(self.decides_on_symbolic(v) for v in test.values)
        return self.is_symbolic(test)

    @staticmethod
    def _is_self_attr(e) -> bool:
        e = chain_root(e)
        return isinstance(e, ast.Name) and e.id == "self"
