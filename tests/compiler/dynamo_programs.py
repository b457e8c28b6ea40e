"""Programs from PyTorch's dynamo test suite (test/dynamo: test_misc, test_repros, test_functions, test_modules),
rewritten as small programs for compiler.jit. Each case builds a "world" (the program and the state it reads
and writes: closures, globals of its own, modules, objects) twice, once for eager and once for the compiled
function, and calls both with identical fresh arguments, sometimes changing the world between calls (a
config attribute, a global rebound, a list appended to, a module's parameter replaced).

`run_case(case, cache)` classifies one case in one cache mode: "ok" (every call as eager: results, exception
types, arguments left behind, the state the world exposes), "refused" (a CompilerError: allowed, counted by
message), "wrong" or "crash". test_dynamo_programs.py runs every case in every mode; bench/dynamo_port.py
prints the counts.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import inspect
import itertools
import math
import operator
import os
import re
import sys
import types
import typing
import warnings

import torch
import torch.nn.functional as F

import compiler
from compiler.features import torch_flags
from compiler.interpreter import InterpreterError
from same_values import tensors_in
from test_differential import assert_same


def T(*shape, seed=0, dtype=torch.float32):
    """A tensor of fixed random values (the same on every call with the same seed)."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


@dataclasses.dataclass
class World:
    fn: typing.Callable
    observe: typing.Callable | None = None  # () -> what the world holds after a call (compared with eager's)
    change: typing.Callable | None = None  # (index of the next call) -> None: change the world between calls


@dataclasses.dataclass
class Case:
    name: str
    build: typing.Callable  # () -> World, or a function (then World(fn))
    calls: list  # makers of fresh argument tuples, one per call
    refused: str | None = None  # a refusal expected, by a fragment of its message


CASES: list[Case] = []
# what counts as a clear refusal (the construct and the line named): the compiler's errors, and the interpreter's
# for Python it does not run (as `thunder-lint run` treats them)
REFUSALS = (compiler.CompilerError, InterpreterError)


def program(*calls, refused=None):
    """Register `build` (its name is the case's) with the argument makers of its calls."""
    def register(build):
        CASES.append(Case(build.__name__, build, list(calls) or [lambda: ()] * 2, refused))
        return build
    return register


def twice(make):
    return [make, make]


# ---------------------------------------------------------------------------------------------------
# Running one case
# ---------------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Outcome:
    status: str  # ok | refused | wrong | crash
    detail: str = ""


def _world(case) -> World:
    built = case.build()
    return built if isinstance(built, World) else World(built)


def _run(fn, args, seed):
    torch.manual_seed(seed)
    grad = torch.is_grad_enabled()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args), None
    except Exception as e:  # noqa: BLE001 - eager's exception is part of what is compared
        return None, e
    finally:
        torch.set_grad_enabled(grad)


def refusal_key(e: Exception) -> str:
    text = re.sub(r" at \S+:\d+ \(in [^:]*(: `.*?`)?\)", "", str(e).split("\n")[0])
    text = re.sub(r"`[^`]*`", "`...`", text)
    return f"{type(e).__name__}: {re.sub(r'[0-9]+', 'N', text)[:150]}"


def run_case(case: Case, cache: str, **jit_options) -> Outcome:
    """(torch's global switches a case changes, the default dtype among them, are put back afterwards)"""
    switches, grad = torch_flags.current(), torch.is_grad_enabled()
    try:
        return _run_case(case, cache, **jit_options)
    finally:
        torch_flags.set_state(switches)
        torch.set_grad_enabled(grad)


def _run_case(case: Case, cache: str, **jit_options) -> Outcome:
    eager, jitted = _world(case), _world(case)
    jfn = compiler.jit(jitted.fn, cache=cache, **jit_options)
    # a fused reduction read by `.item()` sums in another order, as torch.compile's does: Python floats agree to
    # float32 roundings there (tests/compiler/test_differential.py float_rtol); the default path stays exact
    fused = {"float_rtol": 1e-5} if jit_options.get("executors") else {}
    for i, make in enumerate(case.calls):
        where = f"call {i}"
        if i and eager.change is not None:
            eager.change(i)
            jitted.change(i)
        eager_args, args = make(), make()
        expected, eager_error = _run(eager.fn, eager_args, i)
        actual, error = _run(jfn, args, i)
        if isinstance(error, REFUSALS):
            return Outcome("refused", refusal_key(error))
        if eager_error is not None:
            if error is None:
                return Outcome("wrong", f"{where}: eager raised {eager_error!r}, compiled returned {actual!r}"[:400])
            if type(error) is not type(eager_error):
                return Outcome("wrong", f"{where}: eager raised {eager_error!r}, compiled {error!r}"[:400])
        elif error is not None:
            return Outcome("crash", f"{where}: compiled raised {type(error).__name__}: {error}"[:400])
        try:
            if eager_error is None:
                assert_same(_plain(actual), _plain(expected), where=f"{where}: result", **fused)
            for k, (a, e) in enumerate(zip(args, eager_args)):
                assert_same(_plain(a), _plain(e), where=f"{where}: argument {k} after the call", **fused)
                if isinstance(e, torch.Tensor):  # Python attributes the program set on an argument tensor
                    assert_same(_plain(dict(vars(a))), _plain(dict(vars(e))), where=f"{where}: argument {k}'s attributes")
            if eager_error is None:
                for k, (a, e) in enumerate(zip(tensors_in(actual), tensors_in(expected))):
                    assert_same(_plain(dict(vars(a))), _plain(dict(vars(e))), where=f"{where}: result {k}'s attributes")
            if eager.observe is not None:
                assert_same(_plain(jitted.observe()), _plain(eager.observe()), where=f"{where}: state", **fused)
        except AssertionError as e:
            return Outcome("wrong", str(e)[:400])
    return Outcome("ok")



def _plain(value):
    """What assert_same compares: containers it knows, tensors (and their strides), other values by ==."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (collections.OrderedDict, collections.defaultdict)):
        return (type(value).__name__, {k: _plain(v) for k, v in value.items()})
    if type(value) is dict:
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return (type(value).__name__, sorted(map(repr, value)))
    if isinstance(value, torch.Size):
        return value
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return (type(value).__name__, tuple(_plain(v) for v in value))
    if type(value) in (list, tuple):
        return type(value)(_plain(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)})
    if isinstance(value, torch.nn.Module):
        return (type(value).__name__, {k: _plain(v) for k, v in value.state_dict().items()})
    if isinstance(value, functools.partial):
        return ("partial", value.func, _plain(value.args), _plain(value.keywords))
    if isinstance(value, types.GeneratorType):  # (where its frame stands: not started, suspended, finished)
        return ("generator", value.gi_code, inspect.getgeneratorstate(value))
    if isinstance(value, contextlib._GeneratorContextManagerBase):  # a @contextmanager object: its generator, args
        return ("contextmanager", _plain(value.gen), *(_plain(getattr(value, k, None)) for k in ("args", "kwds")))
    if hasattr(value, "__dict__") and not isinstance(value, type) and not callable(value):
        return (type(value).__name__, {k: _plain(v) for k, v in vars(value).items()})
    if type(value).__module__.startswith("torch") and hasattr(type(value), "__enter__"):
        return type(value).__name__  # (a context manager object: compared by type)
    return value


# ---------------------------------------------------------------------------------------------------
# test_misc: Python semantics around tensors
# ---------------------------------------------------------------------------------------------------

@program(lambda: (T(4, 4), T(4, 4, seed=1), True), lambda: (T(4, 4), T(4, 4, seed=1), False),
         lambda: (T(4, 4), T(4, 4, seed=1), None), lambda: (T(4, 4), T(4, 4, seed=1), True))
def boolarg():
    def fn(a, b, flag):
        return a - b if flag else b - a
    return fn


@program(lambda: ([T(3), T(3, seed=1), T(3, seed=2)],), lambda: ((T(3), T(3, seed=1), T(3, seed=2)),))
def callpacked():
    def fn(args):
        a, b, c = args
        return a - b * c
    return fn


@program(lambda: (T(3), T(3, seed=1), T(3, seed=2), AssertionError), lambda: (T(3), T(3, seed=1), T(3, seed=2), ValueError))
def raises_with_tensor_message():
    def fn(a, b, c, cls):
        x = a + b - c * 10
        raise cls(str(x.shape))
    return fn


@program(lambda: (T(10, 10), T(10, 10, seed=1)))
def inplace_on_new_tensor():
    def fn(a, b):
        o = torch.empty((10, 10))
        o.copy_(a)
        o -= b
        return o
    return fn


@program(lambda: (T(3),), lambda: (T(3, seed=1),))
def inplace_desugaring_on_literals():
    def fn(y):
        x0 = 1
        x0 += y
        x1 = 1
        x1 -= y
        return x0, x1
    return fn


@program(lambda: (T(8, 3), T(8, 3, seed=1)), lambda: (T(6, 4), T(6, 4, seed=1)))
def unpack_size_into_empty():
    def fn(a, b):
        a, b = a[:5, :], b[:5, :]
        x, y = a.size()
        o = torch.empty((x, y))
        o.copy_(a / b)
        return o
    return fn


@program(lambda: (T(3),), lambda: (T(5),), lambda: (T(3),))
def int_shape_binops():
    def fn(x):
        y = 15 - x.shape[0]
        y = 4 + y
        y = 5 * y
        y = 2 % y
        y = 3 ** y
        y = 10 // y
        y = pow(2, y)
        y = 10 / y
        return x + y
    return fn


@program(lambda: (T(3),), lambda: (T(6),))
def shape_int_inplace_binops():
    def fn(x):
        p = x.shape[0]
        p += 2
        p -= 2
        p **= 2
        p /= 2
        p *= 2
        p //= 2
        p %= 2
        return x + p
    return fn


@program(lambda: (T(10),), lambda: (T(3),), lambda: (T(12),))
def shape_int_comparisons():
    def fn(x):
        a = x.shape[0]
        if a != 10:
            out = 1
        elif a < 2:
            out = 3
        elif a >= 12:
            out = 4
        elif a == 10:
            out = 2
        else:
            out = 5
        return x + out
    return fn


@program(lambda: (T(3),), lambda: (T(5),))
def param_shape_binops():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.param = torch.nn.Parameter(T(15))

        def forward(self, x):
            p = self.param.shape[0]
            y = p - x.shape[0]
            y = p + y
            y = p * y
            y = p % y
            y = p // y
            y = p / y
            return x + y
    return M()


class _RAdd:
    def __init__(self, value):
        self.value = value

    def __radd__(self, other):
        return self.value + other


@program(lambda: (T(3), _RAdd(4)), lambda: (T(3), _RAdd(4)))
def user_defined_radd():
    def fn(x, c):
        return x + (x.shape[0] + c)
    return fn


@program()
def user_defined_iter_list_grows():
    class Holder:
        def __init__(self):
            self.a = [T(2, 2), T(2, 2, seed=1)]

        def __iter__(self):
            return iter(self.a)

    holder = Holder()

    def fn():
        return [x + 1 for x in holder]

    return World(fn, change=lambda i: holder.a.append(T(2, 2, seed=i + 5)))


@program(lambda: (T(3), T(3)), lambda: (T(3), T(4)), lambda: (T(2, 3), T(2, 3, seed=1)))
def compare_shapes_as_lists_and_tuples():
    def fn(a, b):
        x, y = list(a.unsqueeze(-1).shape), list(b.unsqueeze(-1).shape)
        first = a + 1 if x == y else a + 2
        same = tuple(a.shape) != tuple(b.shape)
        return first, same
    return fn


@program(lambda: (T(10, 10), T(10, 10, seed=1)), lambda: (-10, torch.arange(-3, 3)), lambda: (-0.1, T(4)))
def builtin_abs():
    def fn(x, y):
        return abs(x) + abs(y)
    return fn


@program(lambda: (T(3),), lambda: (torch.arange(3),))
def builtin_isinstance():
    def fn(x):
        t = torch.arange(1, 3)
        return [isinstance(x, torch.Tensor), isinstance(t, torch.Tensor), isinstance(x, int), isinstance(3, int),
                isinstance([1, 2], list), isinstance({"a": 1}, dict), x.is_floating_point()]
    return fn


@program(lambda: (torch.ones(2, 3),), lambda: (torch.ones(2, 3),), lambda: (torch.ones(2, 3),))
def os_environ_get_changed_between_calls():
    key = "THUNDER_LINT_DYNAMO_PORT_ENV"

    def fn(x):
        return x + 1 if os.environ.get(key) == "1" else x - 1

    def change(i):
        os.environ[key] = "1" if i % 2 else "0"

    os.environ.pop(key, None)
    return World(fn, change=change)


@program(lambda: (T(4, 4), T(4, 4, seed=1)))
def sys_modules_lookups():
    def fn(x, y):
        assert sys.modules.get("a_module_that_is_not_loaded") is None
        assert "operator" in sys.modules
        op = sys.modules["operator"]
        op2 = sys.modules.get("another_missing_module", op)
        return op.add(x, y), op2.neg(sys.modules.get("builtins").abs(x))
    return fn


@program(lambda: (T(5),))
def math_constant_folded():
    def fn(a):
        return a + math.sqrt(63) + math.pi * math.log(2.0)
    return fn


@program(lambda: (torch.ones(2, 2),))
def tensor_hasattr():
    def fn(x):
        return x + 2 if hasattr(x, "test") else x + 1
    return fn


@program(lambda: (T(3),), lambda: (T(3, seed=1),))
def set_discard():
    def fn(y):
        x = {"bar"}
        x.discard("bar")
        x.discard("foo")
        return y + len(x)
    return fn


@program(lambda: (torch.ones(1), set(), [1, 2, 1]), refused="a value of type builtins.set")
def set_update_on_an_argument():
    def fn(x, int_set, int_list):
        int_set.update(map(int, int_list))
        return x + 1, int_set
    return fn


@program(lambda: (T(3), torch.add), lambda: (T(3), torch.mul), lambda: (T(3), torch.add))
def frozenset_of_functions_contains():
    funcs = frozenset([torch.add])

    def fn(x, func):
        if func in funcs:
            x = torch.add(x, 1.0)
        return torch.mul(x, 2.0)
    return fn


@program()
def inline_list_mutation_of_a_new_list():
    def f1(x):
        x.append(torch.ones(8))
        return x

    def fn():
        x = [torch.ones(6)]
        f1(x)
        return x
    return fn


@program()
def inline_dict_mutation_of_a_new_dict():
    def f1(d):
        d["c"] = d["a"] + d.pop("b")
        return d

    def fn():
        d = {"a": torch.ones(5), "b": torch.ones(5)}
        f1(d)
        return d
    return fn


@program(lambda: ({"a": T(2, 2), "b": T(2, 2, seed=1)},), refused="changes its argument")
def clear_an_argument_dict():
    def fn(d):
        d.clear()
        return d
    return fn


@program()
def clear_a_module_attribute_dict():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = {"a": T(2, 2), "b": T(2, 2, seed=1)}

        def forward(self):
            self.a.clear()
            return self.a

    m = M()
    return World(m, observe=lambda: dict(m.a))


@program()
def clear_a_user_objects_dict():
    class Holder:
        def __init__(self):
            self.a = {"a": T(2, 2), "b": T(2, 2, seed=1)}

    holder = Holder()

    def fn(inp):
        ret = len(holder.a) + inp
        holder.a.clear()
        return holder.a, ret

    return World(lambda: fn(torch.ones(1)), observe=lambda: dict(holder.a))


@program()
def recursive_list_mutations():
    def f1(x, y):
        x.append(torch.tensor([1.1]))
        y.append(torch.tensor([1.2]))
        return x, y

    def f2(x, y):
        x.append(torch.tensor([2.1]))
        y.append(torch.tensor([2.2]))
        return f1(x, y)

    def fn():
        x = [torch.tensor([4.1])]
        x.append(torch.tensor([3.1]))
        return f2(x, [torch.tensor([3.2])])
    return fn


class _MyClass1:
    pass


class _MyClass2:
    pass


@program(lambda: (T(3), _MyClass1), lambda: (T(3), _MyClass1), lambda: (T(3), _MyClass2))
def id_of_a_class_argument():
    def fn(x, y):
        return x + (id(y) % 7)
    return fn


@program(lambda: (T(1),), lambda: (torch.zeros(1),), lambda: (torch.tensor([1.0]),))
def inlined_function_branching_on_a_tensor():
    def f1(inp):
        return inp + 1 if inp == 0 else inp + 2

    def fn(inp):
        return f1(inp)
    return fn


@program()
def update_locals_list_comprehension():
    def fn():
        x = torch.rand([2, 2, 2, 2, 2, 2])
        perm = [0, 3, 5]
        perm = list(range(min(perm))) + perm
        perm.extend(i for i in range(x.dim()) if i not in perm)
        return perm
    return fn


@program(lambda: (T(4),))
def side_effects_after_data_reads():
    def fn(x):
        alist = [x]
        alist.append(x + 1)
        alist[0].sum().item()
        res = alist.pop()
        res.sum().item()
        return res
    return fn


@program(lambda: (torch.zeros(1),))
def config_object_read_and_changed():
    class Cfg:
        def __init__(self):
            self.val = 0.5
            self.count = 3

    cfg = Cfg()

    def fn(x):
        for _ in range(cfg.count):
            x = x + cfg.val
        return x

    def change(i):
        if i == 1:
            cfg.count = 1
        elif i == 2:
            cfg.val = 2.0

    return World(fn, change=change)


@program(*[lambda: (torch.zeros(1),)] * 5)
def config_getattr_default():
    class Cfg:
        def __init__(self):
            self.val = 0.5
            self.count = 10

    cfg = Cfg()

    def fn(x):
        if getattr(cfg, "just_add_7", False):
            return x + 7
        for _ in range(cfg.count):
            x = x + cfg.val
        return x

    def change(i):
        cfg.just_add_7 = i in (2, 3)

    return World(fn, change=change)


@program(lambda: (torch.zeros(10, 20), torch.Size([10, 20])), lambda: (torch.zeros(10, 20), (10, 20)),
         lambda: (torch.zeros(10, 20), [10, 20]))
def size_input_of_every_type():
    def fn(x, s):
        a, b = s
        return x + (a - b)
    return fn


@program(lambda: (torch.tensor([100.0]),))
def nonlocal_cell_output():
    out = [None]

    def build():
        result = None

        def fn(a):
            nonlocal result
            result = a + a * 10
            out[0] = result

        return fn

    return World(build(), observe=lambda: out[0])


@program(lambda: (torch.tensor([100.0]), torch.tensor([200.0])))
def return_nested_function_called_inside():
    def fn(a, b):
        c = a + b
        d = a + 1.0

        def fn2(f: int = 7, g: float = 9.0):
            return c * f - d * g

        return fn2(1.5)
    return fn


@program(lambda: ({"a": torch.tensor([100.0]), "b": torch.tensor([200.0])},))
def tensor_dict_items_values_keys():
    def fn(inputs):
        total = torch.zeros(1)
        for _, v in inputs.items():
            total += v
        for v in inputs.values():
            total += v
        for k in inputs.keys():
            total += inputs[k]
        return total
    return fn


@program(lambda: ({"a": torch.tensor([100.0]), "b": torch.tensor([200.0])},
                  {"b": torch.tensor([1.0]), "c": torch.tensor([2.0])}))
def tensor_dict_key_union():
    def fn(inputs_a, inputs_b):
        total = torch.zeros(1)
        for k in sorted(inputs_a.keys() | inputs_b.keys()):
            if k in inputs_a:
                total += inputs_a[k]
            if k in inputs_b:
                total += inputs_b[k]
        return total
    return fn


@program(lambda: ({"a": torch.tensor([100.0]), "b": torch.tensor([200.0])},))
def dict_and_list_comprehensions():
    def fn(inputs):
        d = {k: v + 1 for k, v in inputs.items()}
        return d, torch.sum(torch.cat([v + 1 for _, v in inputs.items()], 0))
    return fn


@program(lambda: (T(3), T(3, seed=1)), lambda: (T(3), torch.arange(3)))
def is_floating_point_and_is_tensor():
    def fn(a, b):
        x = a + 1.0
        if torch.is_floating_point(b):
            x = x + b
        if b.is_floating_point():
            x = x + b
        if torch.is_tensor(b):
            x = x + 2.0
        return x
    return fn


@program(lambda: ({"input": T(2, 3)},), lambda: (T(2, 3),))
def is_tensor_of_a_dict():
    def fn(x):
        return x + 1 if torch.is_tensor(x) else torch.ones([2, 3])
    return fn


@program(lambda: (T(3, 4),), lambda: (T(5),))
def numel_and_nelement():
    def fn(a):
        return a + a.numel() + torch.numel(a), a + a.nelement()
    return fn


@program(lambda: (T(2, 3),))
def pair_and_ntuple():
    def fn(a):
        return (torch.zeros(torch.nn.modules.utils._pair(a.size())) + a
                + torch.ones(torch.nn.modules.utils._ntuple(3)(3)).sum())
    return fn


@program(lambda: (T(10, 10), T(10, 10, seed=1)), lambda: (T(10, 10, seed=2), T(10, 10, seed=3)))
def tensor_item():
    def fn(a, b):
        return (a + b).sum().item()
    return fn


_MyTuple = collections.namedtuple("_MyTuple", ["a", "b", "ab"])


@program(lambda: (torch.tensor([10.0]), torch.tensor([20.0])))
def namedtuple_made_and_returned():
    def fn(a, b):
        tmp = _MyTuple(a, b, a + b)
        return _MyTuple(tmp.a, tmp[1], tmp.ab + b)
    return fn


@program(lambda: (_MyTuple(T(2), T(2, seed=1), T(2, seed=2)),), lambda: (torch.max(T(3, 2), 0),))
def namedtuple_argument_unpacked():
    def fn(packed):
        a, b, c = packed
        if hasattr(packed, "b"):
            b = packed.b + 1
        return a + b + c
    return fn


@program(lambda: (T(3),), lambda: (T(4),))
def assert_on_shapes():
    def fn(x):
        assert x.shape == x.shape
        return x.abs()
    return fn


@program(lambda: (T(10),))
def assert_fails():
    def fn(x):
        assert x.shape != x.shape, "shapes"
    return fn


@program(lambda: (T(3),), lambda: (T(5),))
def check_raises_at_run_time():
    def fn(x):
        torch._check(x.shape[0] > 3, lambda: "Shape is not greater than 3")
        return x + 1
    return fn


@program(lambda: (T(4, 4),))
def closure_adders_as_arguments():
    def adder(y):
        return lambda x: x + y

    add5, add_t = adder(5), adder(T(4, 4, seed=3))

    def fn(x):
        return add5(x + 1) - 1, add_t(x + 1) - 1
    return fn


@program(lambda: (T(3),), lambda: (T(5),))
def int_int_comparisons():
    def fn(x):
        if 2 != 2:
            out = 1
        elif 2 < 1:
            out = 1
        elif 2 == 2:
            out = 2
        else:
            out = 1
        return x + out
    return fn


@program(lambda: (T(5),))
def getattr_of_a_library_table():
    def fn(x):
        return x * len(torch.nn.modules.utils.__all__ if hasattr(torch.nn.modules.utils, "__all__") else "ab")
    return fn


@program(lambda: (torch.ones(5, dtype=torch.cfloat),))
def complex_real_set():
    def fn(x):
        x.real = torch.full((5,), 10.0)
        return x + 1
    return fn


@program(lambda: (T(5),))
def attribute_on_a_new_tensor():
    def fn(x):
        y = x + 10
        y.foo = 42
        return y, y.foo
    return fn


@program(lambda: (torch.ones(5), True), lambda: (torch.ones(5), False))
def attribute_on_an_input_tensor():
    def fn(x, flag):
        x.offloading_activation = flag
        return x + 1, x.offloading_activation
    return World(fn)


@program(lambda: (T(2, 3), T(3, 4, seed=1)))
def matmul_operator():
    def fn(a, b):
        return a @ b, torch.matmul(a, b).sum(0)
    return fn


@program(lambda: (torch.ones(8, dtype=torch.long),), lambda: (torch.tensor([4]),))
def slicing_with_a_tensor_index():
    def fn(y):
        x = torch.ones(8)
        idx = y[0]
        return (x[idx:] + 3) * 5
    return fn


@program(lambda: (torch.arange(10), T(10, 20)))
def setitem_with_a_tensor_slice_start():
    def fn(lengths, ones):
        ones[(3, slice(lengths[3], None, None))] = 0
        return (ones,)
    return fn


@program()
def rng_state_get_and_set():
    def fn():
        state = torch.get_rng_state()
        before = torch.rand(100)
        torch.set_rng_state(state)
        after = torch.rand(100)
        return before, after
    return fn


@program(lambda: (torch.ones(1),))
def threading_local_attribute():
    import threading

    holder = threading.local()
    holder.x = T(1, seed=4)

    def fn(x):
        return torch.cat([x, holder.x])
    return fn


@program(lambda: (T(4, 10),))
def sequential_appending_to_an_argument_list():
    torch.manual_seed(0)
    layers = torch.nn.Sequential(torch.nn.Linear(10, 10), torch.nn.ReLU(), torch.nn.Linear(10, 10))

    def fn(x):
        outputs = [x]
        for layer in layers:
            outputs.append(layer(outputs[-1]))
        return outputs[-1], len(outputs)
    return fn


@program(lambda: (T(10),))
def parameter_dtype_of_a_module():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(10, 10), torch.nn.ReLU())

    def fn(x):
        dtype = next(model.parameters()).dtype
        return x + torch.zeros(10, dtype=dtype, device=x.device)
    return fn


@program(lambda: (T(48, 255, 255, dtype=torch.float16)[:4],))
def copy_into_weird_strides():
    def fn(a):
        b = torch.zeros(4, 4, 256, 300, dtype=torch.float16)
        b[:, 0, 1:256, 1:256] = a
        c = b.view(4, 2, 1024, 150)
        d = c.transpose(2, 1)
        d.add_(1)
        return d.sum((2, 3))
    return fn


@program(lambda: (T(10), T(10, seed=1), {"layer0": {"memory_keys": T(10, seed=2)}}))
def recursive_map_over_an_argument_dict():
    def _recursive_map(struct):
        for k, v in struct.items():
            if v is not None:
                if isinstance(v, dict):
                    _recursive_map(v)
                else:
                    struct[k] = v

    def fn(a, b, v):
        x = a / (torch.abs(a) + 1)
        if v is not None:
            _recursive_map(v)
        return x * b
    return fn


@program(lambda: (T(11, 26), 2), lambda: (T(11, 26), 0), lambda: (T(11, 26), 2))
def module_list_indexed_by_an_int_argument():
    torch.manual_seed(0)
    nets = torch.nn.ModuleList([torch.nn.Sequential(torch.nn.Linear(26, 40), torch.nn.GELU(), torch.nn.Linear(40, 7))
                                for _ in range(4)])

    def fn(x, cycle):
        return nets[cycle](x)
    return fn


@program()
def exec_import_in_a_helper():
    def fn1():
        exec("import math")

    def fn2():
        try:
            math.sqrt(4)
            return False
        except NameError:
            return True

    def fn():
        fn1()
        return fn2(), torch.ones(2)
    return fn


@program(lambda: (T(4),))
def hf_model_output_like():
    @dataclasses.dataclass
    class Output:
        a: torch.Tensor
        b: torch.Tensor = None

    def fn(x):
        out = Output(a=x * 2, b=x + 1)
        return out.a + out.b, Output(a=out.a)
    return fn


@program(lambda: (T(2, 5, 10, 10).to(memory_format=torch.channels_last), 4),
         lambda: (T(2, 5, 4, 8).to(memory_format=torch.channels_last), 20))
def channels_last_input_plus_int():
    def fn(x, val):
        return x + val, x.stride()
    return fn


@program(lambda: (torch.randint(0, 2, (3, 4), generator=torch.Generator().manual_seed(0)).bool(),))
def torch_where_single_argument():
    def fn(mask):
        return torch.where(mask)
    return fn


# ---------------------------------------------------------------------------------------------------
# test_functions / test_misc: builtins, closures, generators, context managers
# ---------------------------------------------------------------------------------------------------

@program(lambda: (T(4), T(4, seed=1)))
def builtins_min_max_over_shapes_and_tensors():
    def fn(a, b):
        n = min(a.shape[0], b.shape[0], 3)
        m = max([a.dim(), b.dim()])
        return torch.maximum(a, b)[:n] * m, max(1.5, a.shape[0])
    return fn


@program(lambda: (T(3, 4),))
def enumerate_zip_reversed_sorted():
    def fn(x):
        rows = list(x.unbind(0))
        acc = torch.zeros(4)
        for i, (r, s) in enumerate(zip(rows, reversed(rows))):
            acc = acc + r * i - s
        keys = sorted({"b": 2, "a": 1}.items())
        return acc, keys
    return fn


@program(lambda: (T(5),))
def functools_reduce_and_partial():
    def fn(x):
        add = functools.partial(torch.add, alpha=2)
        return functools.reduce(lambda a, b: add(a, b), [x, x * 2, x * 3])
    return fn


@program(lambda: (T(3),))
def itertools_product_and_chain():
    def fn(x):
        out = []
        for a, b in itertools.product([1, 2], [3]):
            out.append(x * a + b)
        return list(itertools.chain(out, [x]))
    return fn


@program(lambda: (T(4),))
def operator_module_functions():
    def fn(x):
        return operator.add(x, 1), operator.mul(x, 2), operator.neg(x), operator.getitem(x, 1), operator.truth(True)
    return fn


@program(lambda: (T(4),))
def a_generator_of_tensors():
    def gen(x):
        for i in range(3):
            yield x + i

    def fn(x):
        return sum(gen(x)), list(gen(x * 2))[-1]
    return fn


@program(lambda: (T(4),))
def a_generator_expression_with_any_all():
    def fn(x):
        parts = (x + i for i in range(4))
        return any(p.sum() > 100 for p in parts), all(i >= 0 for i in range(3)), x * 2
    return fn


@program(lambda: (T(3),))
def a_user_context_manager():
    log = []

    class Ctx:
        def __enter__(self):
            log.append("enter")
            return self

        def __exit__(self, *exc):
            log.append("exit")
            return False

    def fn(x):
        with Ctx():
            y = x * 2
        return y

    return World(fn, observe=lambda: list(log))


@program(lambda: (T(3),))
def a_contextmanager_generator_storing_tensors():
    saved = []

    @contextlib.contextmanager
    def saving(t):
        saved.append(t * 2)
        yield
        saved.append(t + 1)

    def fn(x):
        with saving(x):
            y = x.sin()
        return y

    return World(fn, observe=lambda: list(saved))


@program(lambda: (T(3, requires_grad=None) if False else T(3).requires_grad_(),))
def grad_mode_blocks():
    def fn(x):
        with torch.no_grad():
            a = x * 2
        with torch.enable_grad():
            b = x * 3
        with torch.set_grad_enabled(False):
            c = x * 4
        return a, b, c, a.requires_grad, b.requires_grad
    return fn


@program(lambda: (T(4, 4), T(4, 4, seed=1)))
def autocast_cpu_bfloat16():
    def fn(a, b):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            c = a @ b
        return c, c.dtype, (a @ b).dtype
    return fn


@program(lambda: (T(3),))
def try_except_finally_around_ops():
    log = []

    def fn(x):
        try:
            y = x.view(-1, 7)
        except RuntimeError:
            y = x * 2
            log.append("caught")
        finally:
            log.append("finally")
        return y

    return World(fn, observe=lambda: list(log))


@program(lambda: (T(3),))
def raise_and_catch_a_custom_exception():
    class MyError(Exception):
        pass

    def inner(x):
        if x.shape[0] == 3:
            raise MyError("three")
        return x

    def fn(x):
        try:
            return inner(x)
        except MyError as e:
            return x * len(str(e))
    return fn


@program(lambda: (T(3),))
def exception_chained_with_from():
    def fn(x):
        try:
            try:
                raise KeyError("a")
            except KeyError as e:
                raise ValueError("b") from e
        except ValueError as e:
            return x + (1 if isinstance(e.__cause__, KeyError) else 0)
    return fn


@program(lambda: (T(2),))
def lambda_default_capturing_a_tensor():
    t = T(2, seed=9)

    def fn(x):
        f = lambda y, z=t: y + z  # noqa: E731
        return f(x)
    return fn


@program(lambda: (T(2),), lambda: (T(2),))
def function_defaults_replaced_between_calls():
    def helper(x, scale=2.0):
        return x * scale

    def fn(x):
        return helper(x)

    def change(i):
        helper.__defaults__ = (3.0 + i,)

    return World(fn, change=change)


@program(lambda: (T(2),), lambda: (T(2),), lambda: (T(2),))
def global_like_cell_rebound_between_calls():
    box = {"k": 1.0}
    factor = [2.0]

    def fn(x):
        return x * factor[0] + box["k"]

    def change(i):
        factor[0] = 3.0 * i
        box["k"] = -i

    return World(fn, change=change)


@program(lambda: (T(3),), lambda: (T(3),), lambda: (T(3),))
def a_nonlocal_counter():
    state = {"calls": 0}

    def build():
        count = 0

        def fn(x):
            nonlocal count
            count += 1
            state["calls"] = count
            return x * count
        return fn

    return World(build(), observe=lambda: dict(state))


def in_a_module_of_its_own(source: str, **names) -> dict:
    """Run `source` as the body of a new module (its globals are its own: one per world)."""
    namespace = {"torch": torch, "F": F, "__name__": "dynamo_program_module", **names}
    exec(compile(source, "<dynamo-program-module>", "exec"), namespace)
    return namespace


@program(lambda: (T(3),), lambda: (T(3),))
def a_global_list_counter():
    ns = in_a_module_of_its_own("""
COUNTER = [0]

def fn(x):
    COUNTER[0] += 1
    return x + COUNTER[0]
""")
    return World(ns["fn"], observe=lambda: list(ns["COUNTER"]))


@program(lambda: (T(3),), lambda: (T(3),), lambda: (T(3),))
def a_global_rebound_and_a_global_statement():
    ns = in_a_module_of_its_own("""
SCALE = 2.0
CALLS = 0

def fn(x):
    global CALLS
    CALLS += 1
    return x * SCALE + CALLS
""")

    def change(i):
        ns["SCALE"] = 2.0 + i

    return World(ns["fn"], observe=lambda: ns["CALLS"], change=change)


@program(lambda: (T(3),), lambda: (T(3),))
def a_global_tensor_changed_in_place_between_calls():
    ns = in_a_module_of_its_own("""
WEIGHT = torch.ones(3)

def fn(x):
    return x * WEIGHT
""")
    return World(ns["fn"], change=lambda i: ns["WEIGHT"].add_(i))


@program(lambda: (T(3),))
def string_formatting_of_shapes():
    def fn(x):
        name = f"tensor-{x.shape[0]}-{x.dtype}"
        return x * len(name), name
    return fn


@program(lambda: (T(3),))
def print_of_a_shape():
    def fn(x):
        with contextlib.redirect_stdout(None):
            print(x.shape)
        return x + 1
    return fn


@program(lambda: (T(2, 3),))
def list_of_tensors_sorted_by_key():
    def fn(x):
        parts = [x * 3, x, x * 2]
        parts.sort(key=lambda t: float(t.sum()))
        return parts
    return fn


@program(lambda: (T(4),))
def while_loop_on_a_tensor_condition():
    def fn(x):
        n = 0
        while x.abs().sum() > 0.1 and n < 20:
            x = x / 2
            n += 1
        return x, n
    return fn


@program(lambda: (torch.tensor([3, 1, 2]),))
def tolist_driving_python():
    def fn(idx):
        values = idx.tolist()
        return torch.tensor([v * 2 for v in values]), sum(values)
    return fn


@program(lambda: (T(6),))
def masked_select_and_nonzero_combined():
    def fn(x):
        pos = x[x > 0]
        where = torch.nonzero(x > 0).squeeze(1)
        return pos.sum(), where, x[where] - pos
    return fn


@program(lambda: (T(3),))
def return_none_after_in_place():
    def fn(x):
        x.mul_(2)
    return fn


@program(lambda: (T(3),))
def returns_a_set_and_ordered_dict():
    def fn(x):
        return {x.shape[0], 7}, collections.OrderedDict(a=x, b=x * 2)
    return fn


@program(lambda: (T(3),))
def returns_a_defaultdict():
    def fn(x):
        d = collections.defaultdict(list)
        for i in range(3):
            d[i % 2].append(x * i)
        return d
    return fn


@program(lambda: (T(3),))
def star_args_and_kwargs_forwarding():
    def inner(*args, scale=1.0, **kwargs):
        return sum(args) * scale + kwargs.get("offset", 0)

    def fn(x):
        return inner(x, x * 2, scale=3.0, offset=1.0), inner(*[x, x], **{"scale": 0.5})
    return fn


@program(lambda: (T(3),))
def class_with_properties_and_staticmethods():
    class Scaler:
        factor = 3.0

        def __init__(self, x):
            self._x = x

        @property
        def scaled(self):
            return self._x * self.factor

        @staticmethod
        def shift(t):
            return t + 1

        @classmethod
        def make(cls, t):
            return cls(t)

    def fn(x):
        s = Scaler.make(x)
        return Scaler.shift(s.scaled)
    return fn


@program(lambda: (T(3),))
def super_calls_in_user_classes():
    class Base:
        def f(self, x):
            return x + 1

    class Child(Base):
        def f(self, x):
            return super().f(x) * 2

    def fn(x):
        return Child().f(x)
    return fn


@program(lambda: (T(3),), lambda: (T(3),))
def global_module_attribute_changed():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.multiplier = 10

        def forward(self, x):
            return x * self.multiplier

    m = M()

    def fn(x):
        return m(x)

    def change(i):
        m.multiplier = 11

    return World(fn, change=change)


@program(lambda: (T(2),), lambda: (T(2),))
def captured_set_grows():
    seen = {1, 2}

    def fn(x):
        return x * len(seen)

    return World(fn, change=lambda i: seen.add(10 + i))


@program(lambda: (T(2),), lambda: (T(2),))
def function_attribute_flag():
    def gate(x):
        return x + 1 if gate.pred else x - 1

    gate.pred = True

    def fn(x):
        return gate(x)

    return World(fn, change=lambda i: setattr(gate, "pred", False))


@program(lambda: (T(2),), lambda: (T(2),))
def instance_forward_monkeypatched():
    torch.manual_seed(0)
    lin = torch.nn.Linear(2, 2)

    def fn(x):
        with torch.no_grad():
            return lin(x)

    return World(fn, change=lambda i: setattr(lin, "forward", lambda x: x * 100))


@program(lambda: (T(2),), lambda: (T(2),))
def parameters_reordered():
    holder = torch.nn.Module()
    holder.register_parameter("a", torch.nn.Parameter(torch.ones(2)))
    holder.register_parameter("b", torch.nn.Parameter(torch.full((2,), 2.0)))

    def fn(x):
        with torch.no_grad():
            ps = list(holder.parameters())
            return x * ps[0] - ps[1]

    def change(i):
        holder._parameters["a"] = holder._parameters.pop("a")

    return World(fn, change=change)


@program(lambda: (T(2),), lambda: (T(2),))
def module_list_attribute_writes():
    torch.manual_seed(0)
    models = [torch.nn.Linear(2, 2)]

    def fn(x):
        models[0].training = False
        models[0].abc = True
        with torch.no_grad():
            return models[0](x)

    def change(i):
        models[0].training = True
        vars(models[0]).pop("abc", None)

    return World(fn, observe=lambda: (models[0].training, getattr(models[0], "abc", None)), change=change)


@program(lambda: (T(5),))
def set_default_dtype_inside():
    def fn(x):
        torch.set_default_dtype(torch.float64)
        t = torch.tensor([1j]) * x.sum()
        torch.set_default_dtype(torch.float32)
        return t
    return fn


@program(lambda: (torch.empty(0, 3),), lambda: (torch.ones(2, 3),))
def unused_select_that_raises():
    def fn(t):
        t.select(0, -1)
    return fn


@program(lambda: (T(2, 3),))
def transpose_in_place_then_raise():
    def fn(x):
        x.t_()
        raise ValueError("after t_")
    return fn


@program(lambda: (T(3),))
def a_global_list_appended_by_a_forward_hook():
    store = {}
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 2)
    lin.register_forward_hook(lambda mod, inp, out: store.__setitem__("out", out))

    def fn(x):
        with torch.no_grad():
            return lin(x) * 2

    return World(fn, observe=lambda: dict(store))


@program(lambda: (T(3),), lambda: (T(3, seed=1),))
def returns_an_outside_list_by_identity():
    log = []

    def fn(x):
        log.append(x.sum())
        return x + 1, log

    return World(fn, observe=lambda: list(log))


@program(lambda: (T(2, 4),))
def lazy_linear():
    torch.manual_seed(0)
    return torch.nn.LazyLinear(3)


@program(lambda: (torch.ones(2, 3),))
def tensor_type_legacy():
    def fn(x):
        return x.type(torch.HalfTensor), x.type("torch.DoubleTensor")
    return fn


@program(lambda: (torch.ones(2, 3),))
def vmap_in_place():
    def fn(x):
        return torch.vmap(lambda row: row.add_(1))(x)
    return fn


@program(lambda: (torch.tensor([1.5]),))
def torch_tensor_of_one_element_tensors():
    def fn(t):
        return torch.tensor([t, t])
    return fn


@program(lambda: (T(4),))
def numpy_inside():
    def fn(x):
        a = x.numpy()
        return float(a.max()), x * 2
    return fn


@program(lambda: ([T(3), T(2, seed=1)],))
def foreach_ops():
    def fn(xs):
        torch._foreach_mul_(xs, 2.0)
        return torch._foreach_add(xs, 1), torch._foreach_norm(xs)
    return fn


@program(lambda: (T(3),))
def tensor_new_and_friends():
    def fn(x):
        return x.new([1.0, 2.0, 3.0]) + x, x.ndimension(), torch.is_floating_point(x)
    return fn


# ---------------------------------------------------------------------------------------------------
# test_modules / test_repros: modules
# ---------------------------------------------------------------------------------------------------

@program(lambda: (T(5, 3, 4, 4),), lambda: (T(5, 3, 4, 4, seed=1),))
def batchnorm_train_updates_buffers():
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm2d(3)
    return World(bn, observe=lambda: bn.state_dict())


@program(lambda: (T(5, 3, 4, 4),))
def batchnorm_eval():
    torch.manual_seed(0)
    return torch.nn.BatchNorm2d(3).eval()


@program(lambda: (T(4, 10),), lambda: (T(4, 10, seed=1),))
def dropout_in_train_mode():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(10, 10), torch.nn.Dropout(0.5), torch.nn.ReLU())


@program(lambda: (T(4, 10),))
def module_with_buffer_registered_in_forward():
    class M(torch.nn.Module):
        def forward(self, x):
            if not hasattr(self, "seen"):
                self.register_buffer("seen", torch.zeros(10))
            self.seen.add_(x.sum(0))
            return x * 2

    m = M()
    return World(m, observe=lambda: m.state_dict())


@program(lambda: (T(4, 10),), lambda: (T(4, 10, seed=1),))
def module_keeping_the_last_activation():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(10, 5)
            self.last = None

        def forward(self, x):
            self.last = self.lin(x)
            return self.last.relu()

    torch.manual_seed(0)
    m = M()
    return World(m, observe=lambda: m.last)


@program(lambda: (T(2, 3),))
def module_forward_pre_hook_changing_inputs():
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 3)
    lin.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    return lin


@program(lambda: (T(2, 3),))
def module_calling_submodules_through_getattr():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer0 = torch.nn.Linear(3, 3)
            self.layer1 = torch.nn.Linear(3, 3)

        def forward(self, x):
            for i in range(2):
                x = getattr(self, f"layer{i}")(x)
            return x

    torch.manual_seed(0)
    return M()


@program(lambda: (T(2, 3),))
def module_dict_iteration():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleDict({"a": torch.nn.Linear(3, 3), "b": torch.nn.Tanh()})

        def forward(self, x):
            for name, layer in self.layers.items():
                x = layer(x) + len(name)
            return x

    torch.manual_seed(0)
    return M()


@program(lambda: (T(2, 3),))
def parameter_list_and_named_parameters():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ws = torch.nn.ParameterList([torch.nn.Parameter(T(3, seed=i)) for i in range(3)])

        def forward(self, x):
            total = x
            for name, p in self.named_parameters():
                total = total + p * len(name)
            return total

    return M()


@program(lambda: (T(2, 8, 16),))
def transformer_encoder_layer():
    torch.manual_seed(0)
    return torch.nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True).eval()


@program(lambda: (T(3, 5, 4),))
def lstm_module():
    torch.manual_seed(0)
    return torch.nn.LSTM(4, 6, batch_first=True)


@program(lambda: (T(1, 3, 8, 8),))
def conv_pool_stack():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                               torch.nn.Flatten(), torch.nn.Linear(64, 3))


@program(lambda: (torch.tensor([[1, 2, 0], [3, 0, 0]]),))
def embedding_with_padding():
    torch.manual_seed(0)
    return torch.nn.Embedding(5, 4, padding_idx=0)


@program(lambda: (T(4, 3),), lambda: (T(4, 3, seed=1),))
def module_training_flag_flipped_between_calls():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Dropout(0.5))
    return World(m, change=lambda i: m.train(not m.training))


@program(lambda: (T(4, 3),), lambda: (T(4, 3),))
def module_parameter_replaced_between_calls():
    torch.manual_seed(0)
    m = torch.nn.Linear(3, 3)

    def change(i):
        m.weight = torch.nn.Parameter(torch.zeros(3, 3))

    def fn(x):
        with torch.no_grad():
            return m(x)

    return World(fn, change=change)


@program(lambda: (T(4, 3),))
def module_state_dict_inside():
    torch.manual_seed(0)
    m = torch.nn.Linear(3, 2)

    def fn(x):
        sd = m.state_dict()
        return x @ sd["weight"].t() + sd["bias"], sorted(sd)
    return fn


@program(lambda: (T(2, 3),))
def custom_autograd_function():
    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    def fn(x):
        return Double.apply(x) + 1
    return fn


@program(lambda: (T(2, 3).requires_grad_(),))
def checkpointed_function():
    import torch.utils.checkpoint as cp

    def body(x):
        return torch.sin(x) * 2

    def fn(x):
        return cp.checkpoint(body, x, use_reentrant=False).sum()
    return fn


@program(lambda: (T(3, 4),))
def functional_ops_mix():
    def fn(x):
        return (F.softmax(x, -1), F.layer_norm(x, (4,)), F.gelu(x), F.pad(x, (1, 1)),
                F.normalize(x, dim=0), F.one_hot(torch.arange(3) % 2, 2))
    return fn


@program(lambda: (T(2, 4, 8),))
def scaled_dot_product_attention():
    def fn(q):
        return F.scaled_dot_product_attention(q, q, q, is_causal=True)
    return fn


@program(lambda: (T(4, 5),), lambda: (T(6, 5),))
def chunk_and_cat_roundtrip():
    def fn(x):
        parts = x.chunk(2, 0)
        return torch.cat(list(reversed(parts))), len(parts)
    return fn


@program(lambda: (T(3, 4),))
def einsum_and_bmm():
    def fn(x):
        return torch.einsum("ij,kj->ik", x, x), torch.bmm(x[None], x.t()[None])
    return fn


@program(lambda: (T(8),))
def sort_topk_unique():
    def fn(x):
        v, i = x.sort()
        top = x.topk(3)
        return v, i, top.values, top.indices, torch.unique(x.round())
    return fn


@program(lambda: (T(4, 4),))
def inplace_through_views_of_a_new_tensor():
    def fn(x):
        y = x.clone()
        y[0].add_(10)
        y.diagonal().zero_()
        y.t()[1].mul_(-1)
        return y
    return fn


@program(lambda: (T(4, 4),))
def inplace_through_views_of_an_argument():
    def fn(x):
        x[0].add_(10)
        x.diagonal().zero_()
        x.t()[1].mul_(-1)
        return x.sum()
    return fn


@program(lambda: (T(4, 4),))
def reshape_then_inplace():
    def fn(x):
        flat = x.t().reshape(-1)
        flat.add_(1)
        return x, flat
    return fn


@program(lambda: (T(2, 3),))
def requires_grad_toggling():
    def fn(x):
        y = x.detach().requires_grad_()
        z = (y * 2).sum()
        return z, y.requires_grad, z.requires_grad
    return fn


@program(lambda: (torch.zeros(3, 3),))
def index_put_with_accumulate():
    def fn(x):
        idx = (torch.tensor([0, 0, 2]), torch.tensor([1, 1, 2]))
        return x.index_put(idx, torch.ones(3), accumulate=True)
    return fn


@program(lambda: (T(3, 3),))
def scatter_gather():
    def fn(x):
        idx = torch.tensor([[0, 1, 2], [2, 1, 0], [1, 1, 1]])
        return torch.gather(x, 1, idx), torch.zeros(3, 3).scatter_(0, idx, x)
    return fn


@program(lambda: (T(5),), lambda: (T(5, seed=1),))
def random_ops_seeded_inside():
    def fn(x):
        torch.manual_seed(3)
        return x + torch.rand(5), torch.randn_like(x)
    return fn


@program(lambda: (T(5),))
def generator_argument():
    def fn(x):
        g = torch.Generator().manual_seed(1)
        return x + torch.rand(5, generator=g)
    return fn


@program(lambda: (T(3, 3), 2), lambda: (T(3, 3), 3), lambda: (T(3, 3), 2))
def loop_over_an_int_argument():
    def fn(x, n):
        for i in range(n):
            x = x @ x.t() / (i + 1)
        return x
    return fn


@program(lambda: (T(2, 2),))
def kwargs_only_function():
    def inner(x, *, alpha, beta=1.0):
        return x * alpha + beta

    def fn(x):
        return inner(x, alpha=2.0), inner(x, beta=0.0, alpha=3.0)
    return fn


@program(lambda: (T(3),))
def walrus_and_conditional_expression():
    def fn(x):
        if (s := x.shape[0]) > 2:
            y = x * s
        else:
            y = x
        return y if s % 2 else -y
    return fn


@program(lambda: (T(3),))
def match_statement_on_a_shape():
    def fn(x):
        match tuple(x.shape):
            case (3,):
                return x * 3
            case (a, b):
                return x * a * b
            case _:
                return x
    return fn


@program(lambda: (T(2, 3),))
def slice_objects_and_ellipsis():
    def fn(x):
        s = slice(None, None, -1) if False else slice(0, 2)
        return x[..., s], x[:, None, ...].shape
    return fn


@program(lambda: (T(4),))
def global_tensor_read_and_written():
    holder = {"acc": torch.zeros(4)}

    def fn(x):
        holder["acc"] = holder["acc"] + x
        return holder["acc"] * 2

    return World(fn, observe=lambda: dict(holder))


@program(lambda: (T(3),), lambda: (T(3, seed=1),))
def dataclass_instance_argument():
    @dataclasses.dataclass
    class Cfg:
        scale: float = 2.0
        bias: float = 1.0

    cfg = Cfg()

    def fn(x):
        return x * cfg.scale + cfg.bias

    return World(fn, change=lambda i: setattr(cfg, "scale", 5.0))


@program(lambda: (T(3),))
def string_methods_and_dict_get():
    table = {"relu": torch.relu, "tanh": torch.tanh}

    def fn(x):
        name = "ReLU".lower()
        return table.get(name, torch.sigmoid)(x), table.get("x", torch.sigmoid)(x)
    return fn


@program(lambda: (T(3, 4),), lambda: (T(5, 2),))
def size_arithmetic_for_views():
    def fn(x):
        h, w = x.shape
        return x.reshape(w, h), x.view(-1)[: h * w // 2], x.new_zeros(h + w)
    return fn


@program(lambda: (T(4),), lambda: (torch.tensor([-1.0, -2.0, -3.0, -4.0]),), lambda: (T(4, seed=1),))
def data_dependent_return_none():
    def fn(x):
        if x.sum() > 0:
            x.mul_(2)
        return None
    return fn


@program(lambda: (T(3),))
def tuple_of_tensors_unpacked_with_star():
    def fn(x):
        first, *rest = x.unbind(0)
        return first, rest, len(rest)
    return fn


@program(lambda: (T(3),))
def isinstance_of_parameter_and_module():
    p = torch.nn.Parameter(T(3, seed=2))

    def fn(x):
        return (isinstance(p, torch.nn.Parameter), isinstance(x, torch.nn.Parameter), type(x) is torch.Tensor,
                x * p)
    return fn


@program(lambda: (torch.ones(2, 3), functools.partial(torch.add, other=1)),
         lambda: (torch.ones(2, 3), functools.partial(torch.mul, other=3)))
def partial_argument():
    def fn(x, f):
        return f(x)
    return fn


@program(lambda: (torch.ones(2), torch.no_grad()), lambda: (torch.ones(2), torch.enable_grad()))
def context_manager_argument():
    def fn(x, ctx):
        with ctx:
            return (x.requires_grad_() * 2).requires_grad
    return fn


def _linear(seed):
    torch.manual_seed(seed)
    return torch.nn.Linear(2, 2)


@program(lambda: (T(2), _linear(0)), lambda: (T(2), _linear(1)))
def module_argument():
    def fn(x, m):
        with torch.no_grad():
            return m(x) * 2
    return fn


@program(lambda: (torch.ones(2, dtype=torch.float16), __import__("numpy").float64(2.5)))
def numpy_scalar_argument():
    def fn(x, s):
        return x * s
    return fn


@program(lambda: (T(3),))
def setattr_getattr_delattr_on_a_local_object():
    class Box:
        pass

    def fn(x):
        b = Box()
        setattr(b, "t", x * 2)
        v = getattr(b, "t") + 1
        delattr(b, "t")
        return v, hasattr(b, "t")
    return fn


# ---------------------------------------------------------------------------------------------------
# test_functions: small functions of tensor arguments (the suite's make_test), each called twice with
# (10, 10) tensors and once more with other sizes
# ---------------------------------------------------------------------------------------------------

def simple(nargs: int, *, shape=(10, 10), other=(10, 4)):
    """A program of `nargs` tensor arguments: called with `shape`d tensors twice, then `other`-shaped."""
    def make(shp, base):
        return lambda: tuple(T(*shp, seed=base + i) for i in range(nargs))

    def register(fn):
        CASES.append(Case(fn.__name__, lambda: fn, [make(shape, 0), make(shape, 10), make(other, 20)]))
        return fn
    return register


def _sub(a, b):
    return a - b


def _constant3(a, b):
    return a - b + (1.0 + 2)


def _func_with_default(a, b, some_default_arg=True):
    return a - b if some_default_arg else a + b


class _MyCls:
    a = 1


_FLAG = True


@simple(2)
def fn_add_sub(a, b):
    return a + b, a - b, torch.sub(a, b), a.sub(b)


@simple(1)
def cls_hasattr(x):
    if hasattr(_MyCls, "a"):
        x = x + 1
    if hasattr(_MyCls, "b"):
        x = x + 2
    return x


@simple(2)
def finfo_iinfo(a, b):
    if torch.iinfo(torch.int32).bits == 32:
        return torch.finfo(a.dtype).min * b, torch.finfo(a.dtype).eps


@simple(2)
def global_function_and_bound_methods(a, b):
    t = a.sub
    args, kwargs = (b,), {}
    return _sub(a, b), t(b), t(*args), t(*args, **kwargs)


@simple(3)
def method_calls_with_keywords(a, b, c):
    return _constant3(a, b) * c, _constant3(a=b, b=a) + 1, _constant3(a, b=1.0) + b


def _number_method_program(method, num):
    def fn(t):
        return 2 * t if getattr(num, method)() else t
    fn.__name__ = f"number_method_{method}_{type(num).__name__}_{str(num).replace('.', '_')}"
    return fn


for _method, _num in [("as_integer_ratio", 2), ("bit_length", 0), ("conjugate", 1), ("as_integer_ratio", 2.5),
                      ("hex", 1.5), ("is_integer", 1.0), ("is_integer", 1.5)]:
    simple(1)(_number_method_program(_method, _num))


@simple(1)
def device_constant(a):
    return a + torch.ones(1, device=torch.device("cpu"))


@simple(2)
def star_args_from_tuple_and_list(a, b):
    return _sub(*(a, b)), _sub(*[a, b])


@simple(2)
def onnx_and_fx_tracing_checks(x, y):
    first = x - 1 if torch.onnx.is_in_onnx_export() else y + 1
    second = x - 1 if torch.fx._symbolic_trace.is_fx_tracing() else y + 1
    return first, second


@simple(2)
def cat_argument_forms(a, b):
    kwargs = {"tensors": (a, b), "dim": 0}
    return (torch.cat([a, b]), torch.cat((a, b), dim=0), torch.cat(**kwargs), torch.cat(tensors=[a, b], dim=0),
            torch.cat(*[(a, b)], **{"dim": 0}))


@program(lambda: (T(4),), lambda: (T(4, seed=1),))
def list_slice_on_an_object_attribute():
    class Mock:
        def __init__(self):
            self.ets = []

        def run(self, x):
            self.ets = self.ets[-3:]
            self.ets.append(x)
            return torch.sin(x)

    mock = Mock()
    return World(mock.run, observe=lambda: list(mock.ets))


@simple(2)
def deque_operations(a, b):
    d = collections.deque([a, b])
    d.append(a + 1)
    d.extend([a, b])
    d.insert(0, "foo")
    tmp = d.pop()
    another = collections.deque([tmp])
    d.extendleft(another)
    another.clear()
    d.extend(another)
    d[2] = "setitem"
    d = d.copy()
    d.append(d.popleft())
    return list(d)


@simple(1)
def slices(a):
    return a[5], a[:5], a[5:], a[2:5], a[::2], torch.unsqueeze(a, 0)[:, 2:]


@simple(2)
def range_over_a_size(x, y):
    r = x + y
    for _ in range(x.size(0) + 2):
        r = r / y
    return r, torch.tensor(range(x.size(0)))


@simple(1)
def unpack_slices(a):
    first, second = a[:5], a[5:]
    packed = [a[:5], a[5:]]
    c, d = packed
    e, f = (a[:5], a[5:])
    return first - second, c - d, e - f


@simple(2)
def function_with_self_set(a, b):
    return F.avg_pool2d(torch.unsqueeze(a, 0) * torch.unsqueeze(b, 1), kernel_size=2, padding=1)


@simple(2)
def return_tuple_with_arguments(a, b):
    return (a - b, b - a, a, b)


@simple(3)
def inline_with_default(a, b, c):
    return _func_with_default(a, b) * c, _func_with_default(a, b, False)


@simple(1, shape=(4, 10), other=(2, 10))
def transpose_for_scores(x):
    new_shape = x.size()[:-1] + (2, 5)
    return x.view(*new_shape).permute(0, 2, 1)


@simple(1)
def load_global_bool_and_len(x):
    z = len(x) + len([1, 2, 3]) + len({"foo": "bar"}) + len((1, 2, 3)) + len("test str")
    if _FLAG:
        return torch.add(x, z)
    return x


@simple(1)
def dict_builtins(x):
    d = {3: x}
    keys = d.keys()
    d[4] = x + 1
    values = d.values()
    d2 = {3: 2, 4: "aa"}
    return 3 in keys, 5 in keys, d2.keys() == keys, len(values), dict({"foo": x + 1})


@simple(1)
def dict_setdefault_and_update(x):
    d = {"a": 1, "b": 2}
    d.setdefault("a", 10)
    d.setdefault("c", 10)
    d.setdefault("e")
    d.update(b=4)
    out = x + 1 if d["a"] == 1 and d["c"] == 10 and d["e"] is None else x - 1
    return out * d["b"]


@simple(1)
def defaultdict_fromkeys_setdefault(x):
    d = collections.defaultdict.fromkeys("a", "b")
    d["a"] = 1
    d["b"] = 2
    d.setdefault("c", 10)
    return x + 1 if d["a"] == 1 and d["c"] == 10 else x - 1


@program(lambda: (T(4),))
def ordered_dict_global_iterated():
    d1 = collections.OrderedDict({"a": 2})
    d2 = d1

    def fn(x):
        for k in d1:
            x = x * d1[k] * d2[k]
        return x
    return fn


@simple(1)
def callable_checks(x):
    class CallableClass:
        def __call__(self):
            pass

    return (x + 1 if callable(lambda y: True) else x - 1, callable(torch.abs), callable(sum),
            callable(CallableClass()), callable(x), callable([1]))


@simple(1)
def dict_constructors(x):
    z = dict(text_embed=x + 1, other=x + 2)
    o = collections.OrderedDict(sample=torch.ones(10))
    y = float(1.2) + float("1.2")
    return z, o, torch.add(x, y)


@simple(1)
def dtype_queries(x):
    out = []
    if x.dtype == torch.float32:
        out.append(x + 1)
    out.append(x + 1 if x.dtype == torch.get_default_dtype() else x - 1)
    out.append(x + 1 if torch._C._is_any_autocast_enabled() else x - 1)
    out.append(x + 1 if x.dtype == torch.promote_types(torch.int32, torch.float32) else x - 1)
    out.append(x + 1 if torch.is_complex(x) or x.is_complex() else x - 1)
    out.append(torch.is_floating_point(x + 1))
    return out


@simple(1)
def list_compare_polyfill(x):
    for a, b, c in [[(1, 2, 3), (1, 2, 3), 7.77], [(1, 4, 3), (1, 2, 3), 3.33], [(1, 2), (1, 2, 3), 5.55],
                    [(1, 2, 3), (1, 2), 11.11], [(1, -1, 3), (1, 2, 3), 13.33]]:
        if a != b:
            x += 1 * c
        if a == b:
            x += 2 * c
        if a < b:
            x += 4 * c
        if a > b:
            x += 8 * c
        if a <= b:
            x += 16 * c
        if a >= b:
            x += 32 * c
    return x


@simple(1)
def allow_tf32_flag_read(x):
    if torch.backends.cuda.matmul.allow_tf32:
        return x.sin() + 1
    return x.cos() - 1


@simple(1)
def calculate_correct_fan(x):
    return x + torch.nn.init._calculate_correct_fan(x, "fan_in")


@simple(2)
def tensor_type_strings(a, b):
    m = a.to(torch.float16)
    n = a.type(torch.HalfTensor)
    o = a.type("torch.HalfTensor")
    return b.type(m.type()), b.type(n.type()), b.type(o.type())


@simple(1)
def element_size_ndim_t_mt(x):
    out = (x + x.element_size(), x - x.element_size()) if x.element_size() > 1 else (x, x)
    if x.ndim == 2 and x.ndimension() == 2 and x.dim() == 2 and not x.is_sparse and not x.is_cuda:
        out = out + (torch.ones_like(x.T), torch.ones_like(x.mT))
    return out


@simple(1)
def shape_and_size_checks(x):
    if x.shape[0] == 10 and x.size(1) == 10:
        return x + 1
    return x - 1


@simple(2)
def del_locals(a, b):
    c = a + 1
    d = c + 2
    del c, a
    return b + d


@simple(1)
def chunks_with_asserts(x):
    chunk_size = 5
    assert x.shape[0] % chunk_size == 0
    assert x.shape[0] // chunk_size == 2
    return x[:chunk_size] - x[chunk_size:]


@simple(2)
def import_inside(x, y):
    import torch
    from torch import sub

    return sub(torch.add(x, y), y)


@simple(2)
def return_dicts_sharing_lists(x, y):
    z = [x + y, y, False]
    tmp = {"x": x}
    tmp["z"] = [x + y, y]
    tmp["y"] = y
    tmp["z"].append(False)
    return {"x": x, "z": z, "a": x, "b": z, "c": x}, tmp


@simple(2)
def funcdef_closure_with_nonlocal(x, y):
    x = x + y + 1.0

    def inner(z):
        nonlocal x, y
        y = x + z + 20.0
        x = y + z + 10.0

    inner(2.0)
    inner(3.0)
    return x, y


@simple(2)
def inline_softmax_module(x, y):
    return torch.nn.Softmax(dim=-1)(x + y * 2)


@simple(2)
def dtype_compare(a, b):
    if a.dtype == torch.float16:
        return a + 10
    if a.dtype == torch.float32:
        return a - b * 32


@simple(2)
def build_list_unpack(a, b):
    it1 = (x + 1 for x in (a, b))
    it2 = (x - 1 for x in (a, b))
    return torch.cat([*it1, *it2], dim=-1)


@simple(2)
def tensor_len(a, b):
    return a + b + len(a) + b.__len__()


@simple(2)
def list_pop_extend(a, b):
    ll = [a, b]
    ll.append(a + 1)
    ll.extend([b + 2, a + b])
    ll.pop(-1)
    ll.pop(0)
    ll.pop()
    v1, v2 = ll
    return v1 - v2


@simple(2)
def list_tuple_conversions(a, b):
    ll = [a + 2, b]
    ll = tuple(ll)
    tmp = b + 3
    ll = list(ll)
    v1, v2 = ll
    l3 = (a, b) + ()
    return v1 - v2 + tmp, l3[0] + l3[1]


@simple(2)
def list_index_with_a_constant_tensor(a, b):
    items = [a, b, a + 1, b + 1]
    return items[torch.as_tensor(2)]


@simple(2)
def string_startswith_and_module_name(a, b):
    x = a + b
    if "foobar".startswith("foo") and "dynamo" in _constant3.__module__:
        x = x + 1
    return x


@simple(2)
def dict_ops(a, b):
    tmp = {"a": a + 1, "b": b + 2}
    assert tmp.get("zzz") is None
    v = tmp.pop("b") + tmp.get("a") + tmp.get("missing", 3) + tmp.pop("missing", 4)
    tmp.update({"d": 3})
    tmp["c"] = v + tmp["d"]
    if "c" in tmp and "missing" not in tmp:
        return tmp["c"] - tmp["a"] + len(tmp)


@simple(1)
def unwrap_optional_and_zip_longest(x):
    first = torch.ones(2, 2) if torch.jit._unwrap_optional(x) is None else x.sin()
    return first, list(itertools.zip_longest([1, 2, 3], ["a", "b"], [True, False, True, False]))


@program(lambda: (T(2, 3), {}), refused="changes its argument")
def torch_size_as_a_dict_key_in_an_argument():
    def fn(x, cached):
        if x.shape not in cached:
            cached[x.shape] = x
        return x + cached[x.shape]
    return fn


@program(lambda: (T(4, 4),))
def dict_keyed_by_a_parameter():
    param = torch.nn.Parameter(torch.ones(4, 4))

    def fn(a):
        tmp = {"a": a, param: 3}
        return tmp["a"] + tmp[param]
    return fn


@program(lambda: (T(4),))
def mutable_mapping_subclass_read():
    from collections.abc import MutableMapping

    class TensorDict(MutableMapping):
        def __init__(self):
            self._dict = {}

        def __getitem__(self, key):
            return self._dict[key]

        def __setitem__(self, key, value):
            self._dict[key] = value

        def __delitem__(self, key):
            del self._dict[key]

        def __iter__(self):
            return iter(self._dict)

        def __len__(self):
            return len(self._dict)

    td = TensorDict()
    td["a"] = torch.ones(4) * 2

    def gn(x, a=1):
        return x * a

    def fn(x):
        return x * dict(td)["a"], gn(x, **td)
    return fn


@program(lambda: (T(10, 10),))
def global_defaultdict_written():
    dd = collections.defaultdict(list)
    param = torch.nn.Parameter(torch.ones(2, 2))

    def fn(x):
        dd["a"] = x + 1
        dd[param] = 123
        dd["c"] = x * 2
        return dd["b"], len(dd)

    return World(fn, observe=lambda: {k: v for k, v in dd.items() if isinstance(k, str)})


@simple(1)
def class_dict_lookup(x):
    class A:
        x = 4

        def __init__(self):
            self.a = 6

    a = A()
    return x + 1 if "x" in type(a).__dict__ else x + 2


@simple(1)
def defaultdict_made_inside(x):
    dd = collections.defaultdict(lambda: dict())  # noqa: C408
    dd["a"] = x + 1
    dd["c"] = x * 2
    dd.update({"b": x * 3})
    dd.update([["d", x - 2], ("e", x + 2)])
    dd.update(zip("ab", [x + 3, x + 4]))
    return dd["b"], dd


@simple(1)
def dict_and_ordered_dict_calls(x):
    d1 = dict()  # noqa: C408
    d1["x"] = x + 1
    d2 = collections.OrderedDict()
    d2["x"] = x + 2
    pairs = [("a", x), ("b", x + 1), ("c", x + 2)]
    d3 = dict(pairs)
    d3["a"] = x + 10
    d4 = collections.OrderedDict(iter(pairs))
    d4["c"] = x + 20
    d5 = d3.copy()
    d5["a"] = x - 5
    return d1["x"] + d2["x"] + 1, d3["a"] + d4["c"], d5["a"] * d3["a"], isinstance(d4, collections.OrderedDict)


@simple(2)
def dict_fromkeys(x, y):
    lst = ["a", "b"]
    d = dict.fromkeys(lst)
    d1 = dict.fromkeys(d, x + 1)
    d2 = collections.defaultdict.fromkeys(iter(d1), x - 2)
    d3 = collections.OrderedDict.fromkeys(tuple(lst), y)
    return d1["a"] * d2["b"] + d2["a"] + d1["b"] + d3["a"] + d3["b"] + 1


@simple(3)
def dict_update_forms(x, y, z):
    d = {"a": x, "b": y}
    d.update({"a": y - 1})
    d.update([("b", z + 1), ["c", z]])
    d.update(zip("ab", [z + 3, y + 2]))
    od = collections.OrderedDict(a=x * 3, b=y + 2)
    od.update({"a": y + 5})
    od.update([["b", z + 6], ("c", z - 7)])
    od.update(zip("ab", [z - 3, x + 2]))
    return d["a"] * od["a"] + od["c"] + d["b"] + od["b"] * d["c"]


@simple(2)
def min_max_of_tensors_and_numbers(a, b):
    c = a + b
    a = a.sum()
    b = b.sum()
    a = min(max(a, 0), 1)
    b = max(0, min(1, b))
    return max(a, b) - min(a, b) + c


@simple(1)
def sum_of_booleans_over_a_size(x):
    return x + 1 if sum(s == -1 for s in x.size()) == 0 else x - 1


@simple(4)
def sum_map_reduce(a, b, c, d):
    return (sum(map(lambda x: x + 1, [a, b, c, d])), sum([a, b, c, d]), sum([b, c, d], a), sum([b, c, d], start=a),
            functools.reduce(operator.add, [a, b, c, d]), functools.reduce(operator.add, [b, c, d], a),
            sum([0, 1.0, 2, 3.0], -10))


@simple(1)
def reduce_single_items(x):
    return functools.reduce(lambda a, b: (a, b), [x]), functools.reduce(lambda a, b: (a, b), [x], None)


@simple(2)
def tuple_and_set_contains(a, b):
    vals1 = ("a", "b", "c")
    vals2 = {"d", "e", "f"}
    first = a + b if "a" in vals1 and "b" not in vals2 else a - b
    var = {"apple", "banana", "cherry"}
    second = a + 1 if isinstance(var, set) and len({*["apple", "banana", "apple"], *["orange", "banana"]}) == 3 \
        else a - 1
    return first, second


@simple(2)
def set_algebra(a, b):
    set1 = {"apple", "banana", "cherry"}
    set2 = {"google", "microsoft", "apple"}
    inter = set1.intersection(set2)
    union = set1 | set2
    diff = set1 - set2
    x = a + b if "apple" in inter else a - b
    y = a + b if "banana" in inter else a - b
    return x, y, len(union), sorted(diff), set1.isdisjoint(set2)


# ---------------------------------------------------------------------------------------------------
# more from test_misc / test_repros: views, in-place, data-dependent code, numbers
# ---------------------------------------------------------------------------------------------------

@program(lambda: (T(4, 6),), lambda: (T(6, 4),), refused="storage_offset returns a Python value")
def view_as_and_contiguous_checks():
    def fn(x):
        y = x.t()
        z = y.contiguous() if not y.is_contiguous() else y
        return z.view_as(y), y.is_contiguous(), z.is_contiguous(), x.storage_offset()
    return fn


@program(lambda: (T(3, 4),))
def in_place_on_a_view_of_an_intermediate_then_read():
    def fn(x):
        y = x * 1
        v = y[:, 1]
        v.mul_(10)
        return y.sum(0), v
    return fn


@program(lambda: (T(3, 4),))
def argument_mutated_through_a_slice_and_returned():
    def fn(x):
        x[1:, :2] = 0
        return x
    return fn


@program(lambda: (T(5),), lambda: (torch.zeros(5),))
def item_in_a_python_branch():
    def fn(x):
        v = x.sum().item()
        if v > 0:
            return x * v
        return x - 1, v
    return fn


@program(lambda: (torch.tensor([1, 0, 3]),))
def int_of_a_tensor_used_as_a_size():
    def fn(x):
        n = int(x[2])
        return torch.arange(n), x.new_zeros(int(x.max()))
    return fn


@program(lambda: (T(8),), lambda: (T(8, seed=1),))
def boolean_mask_assignment_and_count():
    def fn(x):
        mask = x > 0
        count = int(mask.sum())
        x[mask] = 0
        return x, count
    return fn


@program(lambda: (T(6, 3),), refused="bincount has no meta implementation")
def unique_consecutive_and_bincount():
    def fn(x):
        idx = (x[:, 0] > 0).long()
        return torch.bincount(idx, minlength=2), torch.unique_consecutive(idx)
    return fn


@program(lambda: (T(4, 4),))
def clamp_and_where_with_scalars():
    def fn(x):
        return torch.clamp(x, min=-0.5), torch.where(x > 0, x, 0.0), x.clamp(max=torch.tensor(0.1))
    return fn


@program(lambda: (T(2, 3), 2), lambda: (T(2, 3), 3))
def repeat_and_expand_by_an_int():
    def fn(x, n):
        return x.repeat(n, 1), x.unsqueeze(0).expand(n, -1, -1), x.repeat_interleave(n, dim=1)
    return fn


@program(lambda: (T(2, 3, 4),))
def permute_flatten_unflatten():
    def fn(x):
        y = x.permute(2, 0, 1).flatten(1)
        return y.unflatten(1, (2, 3)), y.shape
    return fn


@program(lambda: (T(4, 4),))
def triu_tril_diag():
    def fn(x):
        return torch.triu(x, 1), torch.tril(x), torch.diag(x), torch.diag_embed(x[0])
    return fn


@program(lambda: (T(3, 3),), lambda: (T(3, 3, seed=1),))
def linalg_ops():
    def fn(x):
        a = x @ x.t() + torch.eye(3)
        return torch.linalg.norm(a), torch.linalg.inv(a), torch.linalg.det(a)
    return fn


@program(lambda: (T(4, 5),))
def cumulative_and_sorting_ops():
    def fn(x):
        return x.cumsum(1), x.cumprod(0), x.argsort(1), torch.cummax(x, 0).values
    return fn


@program(lambda: (T(2, 4, 8),))
def layer_norm_rms_norm_group_norm():
    def fn(x):
        return (F.layer_norm(x, (8,)), F.rms_norm(x, (8,)), F.group_norm(x, 2), F.instance_norm(x))
    return fn


@program(lambda: (T(4, 6),))
def dropout_eval_and_functional():
    def fn(x):
        return F.dropout(x, 0.5, training=False), F.dropout(x, 0.0), F.alpha_dropout(x, 0.5, training=False)
    return fn


@program(lambda: (T(2, 3, 5),))
def conv1d_functional():
    w = T(4, 3, 2, seed=7)

    def fn(x):
        return F.conv1d(x, w, padding=1), F.max_pool1d(x, 2), F.adaptive_avg_pool1d(x, 3)
    return fn


@program(lambda: (T(4, 5), torch.tensor([0, 2, 1, 4])))
def losses():
    def fn(logits, target):
        return (F.cross_entropy(logits, target), F.nll_loss(F.log_softmax(logits, 1), target),
                F.mse_loss(logits, logits * 0.5), F.binary_cross_entropy_with_logits(logits, torch.ones(4, 5)))
    return fn


@program(lambda: (T(4, 5).requires_grad_(), torch.tensor([0, 2, 1, 4])))
def loss_backward_outside():
    def fn(logits, target):
        return F.cross_entropy(logits * 2, target)
    return fn


@program(lambda: (T(3),), lambda: (T(3, seed=1),))
def math_functions_on_numbers():
    def fn(x):
        n = x.shape[0]
        return x * math.sqrt(n) + math.floor(2.7) + math.ceil(n / 2) + abs(-n) + round(2.5) + divmod(7, n)[1]
    return fn


@program(lambda: (T(3), 2.5), lambda: (T(3), -1.0), lambda: (T(3), 0.0))
def float_argument_branches():
    def fn(x, s):
        if s > 0:
            return x * s
        if s == 0:
            return x
        return x / abs(s)
    return fn


@program(lambda: (T(3), 2), lambda: (T(3), 3), lambda: (T(3), 2))
def int_argument_loops_and_lists():
    def fn(x, n):
        parts = [x * i for i in range(n)]
        return torch.stack(parts), [n] * n, list(range(n))[-1]
    return fn


@program(lambda: (T(3), "sum"), lambda: (T(3), "mean"), lambda: (T(3), "max"))
def string_argument_dispatch():
    def fn(x, how):
        return getattr(x, how)()
    return fn


@program(lambda: (T(3), None), lambda: (T(3), T(3, seed=1)))
def optional_tensor_argument():
    def fn(x, bias):
        return x * 2 if bias is None else x * 2 + bias
    return fn


@program(lambda: (T(3), (1, 2)), lambda: (T(3), [3, 4]))
def tuple_and_list_of_numbers_arguments():
    def fn(x, pair):
        a, b = pair
        return x * a + b, type(pair).__name__
    return fn


@program(lambda: ({"x": T(3), "cfg": {"scale": 2.0, "shift": [1.0, 2.0]}},))
def nested_dict_argument():
    def fn(inputs):
        cfg = inputs["cfg"]
        return inputs["x"] * cfg["scale"] + cfg["shift"][1]
    return fn


@program(lambda: (T(2, 2), torch.float64), lambda: (T(2, 2), torch.float16), lambda: (T(2, 2), torch.float64))
def dtype_argument():
    def fn(x, dtype):
        return x.to(dtype) * 2, torch.zeros(2, dtype=dtype)
    return fn


@program(lambda: (T(2, 2), torch.device("cpu")))
def device_argument():
    def fn(x, device):
        return x.to(device) + torch.ones(2, device=device)
    return fn


@program(lambda: (T(3).requires_grad_(),), lambda: (T(3),))
def requires_grad_branches():
    def fn(x):
        if x.requires_grad:
            return x * 2
        return x * 3, torch.is_grad_enabled()
    return fn


@program(lambda: (torch.arange(6.0).reshape(2, 3),))
def tolist_and_item_of_a_row():
    def fn(x):
        rows = x.tolist()
        return [sum(r) for r in rows], x[0, 1].item(), x.flatten().tolist()[-1]
    return fn


@program(lambda: (T(4),))
def returns_a_torch_size_and_numbers():
    def fn(x):
        return x.shape, x.numel(), x.dim(), x.dtype, x.device, x.is_leaf, x.requires_grad
    return fn


@program(lambda: (T(4),))
def returns_nothing_but_mutates():
    def fn(x):
        x.add_(1)
        x.mul_(2)
    return fn


@program(lambda: (T(4), T(4, seed=1)))
def same_argument_twice_and_aliases():
    def fn(x, y):
        x.add_(y)
        return x, y
    return fn


@program(lambda: (lambda t: (t, t))(T(4)),)
def one_tensor_passed_twice():
    def fn(x, y):
        x.add_(1)
        return x * y, x is y
    return fn


@program(lambda: (lambda t: (t, t[1:]))(T(4)),)
def a_view_of_another_argument():
    def fn(x, y):
        y.mul_(2)
        return x.sum(), y
    return fn


@program(lambda: (T(3, 4),))
def custom_module_called_as_a_function_twice():
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 4)

    def fn(x):
        with torch.no_grad():
            return lin(lin(x)), lin.weight.sum()
    return fn


@program(lambda: (T(3, 4),), lambda: (T(3, 4, seed=1),))
def module_with_a_counter_attribute():
    class Counting(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return x * self.calls

    m = Counting()
    return World(m, observe=lambda: m.calls)


@program(lambda: (T(3, 4),))
def module_cache_dict_attribute():
    class Caching(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.cache = {}

        def forward(self, x):
            key = tuple(x.shape)
            if key not in self.cache:
                self.cache[key] = x.sum(0)
            return x + self.cache[key]

    m = Caching()
    return World(m, observe=lambda: dict(m.cache))


@program(lambda: (T(3, 4),))
def module_buffer_updated_in_place():
    class Running(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", torch.zeros(4))

        def forward(self, x):
            self.mean.mul_(0.9).add_(x.mean(0) * 0.1)
            return x - self.mean

    m = Running()
    return World(m, observe=lambda: m.mean.clone())


@program(lambda: (T(3, 4),))
def module_forward_hook_modifying_output():
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 2)
    lin.register_forward_hook(lambda mod, inp, out: out * 10)
    return lin


@program(lambda: (T(3, 4),))
def nested_modules_and_parameters_of_children():
    class Inner(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(T(4, seed=5))

        def forward(self, x):
            return x * self.w

    class Outer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = Inner(), Inner()

        def forward(self, x):
            total = sum(p.sum() for p in self.parameters())
            return self.b(self.a(x)) + total, len(list(self.children()))

    return Outer()


# ---------------------------------------------------------------------------------------------------
# test_repros (part 2) and more: attributes deleted, dict unpacking, dataclasses, list.index, batchnorm with
# gradients, closures returned
# ---------------------------------------------------------------------------------------------------

class _Obj:
    def __init__(self, a, b):
        self.a = a
        self.b = b


@program(lambda: (torch.zeros([]), _Obj(torch.zeros([]), torch.ones([]))))
def delattr_on_an_argument_object():
    def fn(x, obj):
        del obj.a
        obj.c = x + 1
        del obj.c
        tmp = _Obj(x + 2, x + 3)
        del tmp.b
        if hasattr(obj, "a"):
            return x + 1
        return tmp.a, hasattr(obj, "c"), obj.b
    return fn


@program(lambda: (torch.ones(1),))
def delattr_overridden():
    class Guarded:
        def __init__(self, val):
            self.val = val
            self.deletion_attempted = False

        def __delattr__(self, attr):
            if attr == "val":
                self.deletion_attempted = True
            else:
                super().__delattr__(attr)

    def fn(t):
        a, b = Guarded(1), Guarded(2)
        del a.val
        del b.val
        return t + 1, hasattr(a, "val"), a.deletion_attempted, b.deletion_attempted
    return fn


@program(lambda: (torch.zeros([]), _Obj(torch.zeros([]), torch.zeros([]))))
def delattr_then_read_raises():
    def fn(x, obj):
        del obj.a
        x = x + 1
        obj.a
        return x
    return fn


@program(lambda: (torch.ones(4),))
def dict_unpacking_into_a_call():
    def inner(x, t, cond_scale, self_cond, other1, other2):
        return x.sin() + t + cond_scale + self_cond + other1 + other2

    def fn(x):
        d1, d2 = dict(other1=5), dict(other2=4)
        return inner(x, 1, cond_scale=2, self_cond=3, **{**d1, **d2})
    return fn


@program(lambda: (torch.ones([]),))
def maybe_wrapper_and_functools_wraps():
    def normalize(x):
        return x.cos()

    def maybe(f):
        @functools.wraps(f)
        def inner(x):
            return x if x is None else f(x)
        return inner

    def fn(x):
        wrapped = maybe(normalize)
        return wrapped(x.sin()), wrapped.__name__
    return fn


@program(lambda: (T(3),), lambda: (T(6),))
def dropout_probability_from_a_shape():
    def fn(x):
        return F.dropout(x, x.shape[0] / 12)
    return fn


@program(lambda: (T(4), [1, 2, 3]), lambda: (T(4), [2, 3, 4]), lambda: (T(4), [1, 2]))
def dataclass_with_default_factory():
    @dataclasses.dataclass
    class DClass:
        contexts: typing.Any = dataclasses.field(default_factory=list)
        a: int = 1

    def fn(x, inp):
        d = DClass(list(inp))
        d.contexts.append(x.sin() + d.a)
        return d.contexts
    return fn


@program(lambda: (torch.zeros(1),))
def list_index_of_every_sequence_kind():
    Four = collections.namedtuple("Four", "one two three four", defaults=[0, 0, 0, 0])

    def fn(t):
        total = t
        for kind in (list, tuple, torch.Size, collections.deque):
            xs = kind([1, 2, 3, 4])
            total = total + xs.index(3) + xs.index(3, 2) + xs.index(3, 0, 3)
        return total + Four(1, 2, 3, 4).index(3)
    return fn


@program(lambda: (torch.zeros(1),))
def list_index_not_found_raises():
    def fn(t):
        return t + ["bar", "foo"].index("missing")
    return fn


@program(lambda: (T(2, 8, 6, 6).requires_grad_(),), lambda: (T(2, 8, 6, 6, seed=1).requires_grad_(),))
def batchnorm_conv_relu_training():
    torch.manual_seed(3)

    class Repro(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = torch.nn.BatchNorm2d(8)
            self.conv = torch.nn.Conv2d(8, 8, 3, padding=1, bias=False)

        def forward(self, x):
            return (F.relu(self.conv(self.bn(x))),)

    m = Repro()
    return World(m, observe=lambda: [b.clone() for b in m.buffers()])


@program(lambda: (T(4, 10), T(4, 10) < 0))
def masked_softmax_autograd_function():
    class XSoftmax(torch.autograd.Function):
        @staticmethod
        def forward(ctx, inp, mask, dim):
            ctx.dim = dim
            rmask = ~mask.to(torch.bool)
            out = torch.softmax(inp.masked_fill(rmask, torch.finfo(inp.dtype).min), dim)
            out.masked_fill_(rmask, 0)
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            return torch._softmax_backward_data(g, out, ctx.dim, out.dtype), None, None

    def fn(inp, mask):
        return XSoftmax.apply(inp + 1, mask, 1) + 2
    return fn


@program(lambda: (T(3),))
def closure_over_a_loop_variable():
    def fn(x):
        adders = [lambda t, i=i: t + i for i in range(3)]
        late = [lambda t: t * i for i in range(3)]
        return [f(x) for f in adders], [f(x) for f in late]
    return fn


@program(lambda: (T(3),))
def nested_functions_three_deep():
    def fn(x):
        def a(y):
            def b(z):
                def c(w):
                    return w * 2 + y.sum()
                return c(z) + 1
            return b(y)
        return a(x)
    return fn


@program(lambda: (T(3), T(3, seed=1)))
def recursion_on_a_list():
    def total(items):
        if not items:
            return 0
        return items[0] + total(items[1:])

    def fn(a, b):
        return total([a, b, a * b])
    return fn


@program(lambda: (T(4),))
def generator_send_and_close():
    def accumulate():
        total = 0
        while True:
            value = yield total
            if value is None:
                return
            total = total + value

    def fn(x):
        gen = accumulate()
        next(gen)
        gen.send(x)
        out = gen.send(x * 2)
        gen.close()
        return out
    return fn


@program(lambda: (T(4),))
def yield_from_a_sub_generator():
    def inner(x):
        yield x
        yield x + 1

    def outer(x):
        yield from inner(x)
        yield x * 3

    def fn(x):
        return list(outer(x))
    return fn


@program(lambda: (T(3),))
def class_defined_inside_with_methods():
    def fn(x):
        class Acc:
            def __init__(self):
                self.items = []

            def add(self, t):
                self.items.append(t)
                return self

            def total(self):
                return sum(self.items)

        return Acc().add(x).add(x * 2).total()
    return fn


@program(lambda: (T(3),))
def dunder_methods_on_a_user_class():
    class Vec:
        def __init__(self, t):
            self.t = t

        def __add__(self, other):
            return Vec(self.t + other.t)

        def __mul__(self, k):
            return Vec(self.t * k)

        def __len__(self):
            return self.t.shape[0]

        def __getitem__(self, i):
            return self.t[i]

        def __iter__(self):
            return iter(self.t.unbind(0))

        def __bool__(self):
            return True

    def fn(x):
        v = (Vec(x) + Vec(x)) * 3
        return v.t, len(v), v[0], sum(v), bool(v)
    return fn


@program(lambda: (T(3),))
def enum_and_int_enum():
    import enum

    class Mode(enum.Enum):
        ADD = 1
        MUL = 2

    class Level(enum.IntEnum):
        LOW = 1
        HIGH = 3

    def fn(x):
        mode = Mode.MUL
        y = x * 2 if mode is Mode.MUL else x + 2
        return y * Level.HIGH, mode.name
    return fn


@program(lambda: (T(3),))
def typing_and_isinstance_checks():
    def fn(x):
        ok = isinstance(x, (int, torch.Tensor)) and not isinstance(x, typing.Sequence)
        return x + 1 if ok else x - 1, isinstance([1], typing.Sequence)
    return fn


@program(lambda: (T(2, 3),))
def weakref_to_a_module():
    import weakref

    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 3)
    ref = weakref.ref(lin)

    def fn(x):
        m = ref()
        with torch.no_grad():
            return m(x) if m is not None else x
    return fn


@program(lambda: (T(4),))
def copy_and_deepcopy_of_containers():
    import copy

    def fn(x):
        d = {"a": [x, x * 2]}
        shallow = copy.copy(d)
        shallow["b"] = x
        deep = copy.deepcopy({"n": [1, 2]})
        deep["n"].append(3)
        return shallow, deep, list(d)
    return fn


@program(lambda: (T(4),))
def string_join_split_format():
    def fn(x):
        names = "a,b,c".split(",")
        label = "-".join(names).upper()
        return x * len(label), "{}:{:.2f}".format(label, 1.5), label.replace("-", "")
    return fn


@program(lambda: (T(2, 3),))
def global_function_table_dispatch():
    table = {"sin": torch.sin, "cos": torch.cos, "neg": operator.neg}

    def fn(x):
        out = x
        for name in sorted(table):
            out = table[name](out)
        return out
    return fn


@program(lambda: (T(2, 3),), lambda: (T(2, 3),))
def global_table_entry_replaced_between_calls():
    table = {"act": torch.relu}

    def fn(x):
        return table["act"](x)

    return World(fn, change=lambda i: table.__setitem__("act", torch.tanh))


@program(lambda: (T(3),), lambda: (T(3),))
def tuple_of_tensors_global_replaced():
    holder = {"pair": (torch.ones(3), torch.zeros(3))}

    def fn(x):
        a, b = holder["pair"]
        return x * a + b

    return World(fn, change=lambda i: holder.__setitem__("pair", (torch.full((3,), 2.0), torch.ones(3))))


@program(lambda: (T(3),), lambda: (T(3),), lambda: (T(3),))
def module_buffer_replaced_and_removed():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("scale", torch.full((3,), 2.0))

        def forward(self, x):
            return x * self.scale if self.scale is not None else x

    m = M()

    def fn(x):
        return m(x)

    def change(i):
        m.scale = torch.full((3,), 5.0) if i == 1 else None

    return World(fn, change=change)


@program(lambda: (T(3),), lambda: (T(3),))
def submodule_swapped_between_calls():
    torch.manual_seed(0)
    seq = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU())

    def fn(x):
        with torch.no_grad():
            return seq(x)

    def change(i):
        seq[1] = torch.nn.Tanh()

    return World(fn, change=change)


@program(lambda: (T(3),), lambda: (T(3),))
def hook_added_between_calls():
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 3)

    def fn(x):
        with torch.no_grad():
            return lin(x)

    def change(i):
        lin.register_forward_hook(lambda mod, inp, out: out + 100)

    return World(fn, change=change)


@program(lambda: (T(3),), lambda: (T(3),))
def closure_cell_rebound_to_another_tensor():
    def build():
        weight = torch.ones(3)

        def fn(x):
            return x * weight

        def change(i):
            nonlocal weight
            weight = torch.full((3,), 3.0)

        return fn, change

    fn, change = build()
    return World(fn, change=change)


@program(lambda: (T(3),), lambda: (T(3),))
def default_tensor_mutated_in_place_by_a_caller():
    def helper(x, bias=torch.zeros(3)):
        return x + bias

    def fn(x):
        return helper(x)

    return World(fn, change=lambda i: helper.__defaults__[0].add_(5))


@program(lambda: (T(3), 2), lambda: (T(3), 3))
def kwdefault_replaced():
    def helper(x, *, power=2):
        return x ** power

    def fn(x, n):
        return helper(x) + n

    return World(fn, change=lambda i: setattr(helper, "__kwdefaults__", {"power": 3}))


@program(lambda: (T(2, 2),), lambda: (T(2, 2),))
def float32_matmul_precision_switched_between_calls():
    def fn(x):
        return x @ x

    def change(i):
        torch.set_float32_matmul_precision("high" if i == 1 else "highest")

    return World(fn, change=change)


@program(lambda: (T(2, 2),), lambda: (T(2, 2),))
def default_dtype_switched_between_calls():
    def fn(x):
        return torch.zeros(2) + x.double().sum(), torch.tensor([1.5]).dtype

    def change(i):
        torch.set_default_dtype(torch.float64 if i == 1 else torch.float32)

    return World(fn, change=change)


@program(lambda: (T(2, 3),))
def autocast_decorator_and_nested_no_grad():
    @torch.autocast("cpu", dtype=torch.bfloat16)
    def half_mm(a, b):
        return a @ b

    def fn(x):
        with torch.no_grad():
            inner = half_mm(x, x.t())
        return inner.dtype, inner.float().sum(), torch.is_grad_enabled()
    return fn


@program(lambda: (T(3).requires_grad_(),))
def inference_mode_and_set_grad_enabled_false():
    def fn(x):
        with torch.inference_mode():
            a = x * 2
        with torch.set_grad_enabled(False):
            b = x * 3
        return a.requires_grad, b.requires_grad, (x * 4).requires_grad
    return fn


@program(lambda: (T(4, 4),))
def torch_function_helpers():
    def fn(x):
        return (torch.nn.functional.linear(x, x), torch.chunk(x, 2)[1], torch.flatten(x, 0), torch.narrow(x, 1, 1, 2),
                torch.swapaxes(x, 0, 1), torch.movedim(x, 0, 1), torch.take(x, torch.tensor([0, 5])))
    return fn


@program(lambda: (T(2, 3, 4),))
def einops_like_rearrange():
    def fn(x):
        b, c, n = x.shape
        y = x.reshape(b, c, 2, n // 2).permute(0, 2, 1, 3).reshape(b * 2, c, n // 2)
        return y, y.shape
    return fn


@program(lambda: (torch.arange(10.0),), lambda: (torch.arange(12.0),))
def stride_tricks_and_unfold():
    def fn(x):
        return x.unfold(0, 3, 2), x.as_strided((3, 2), (2, 1)), x[::3]
    return fn


@program(lambda: (T(3, 3),))
def complex_numbers():
    def fn(x):
        z = torch.complex(x, x * 2)
        return z.abs(), z.angle(), torch.view_as_real(z), z.conj().imag
    return fn


@program(lambda: (torch.tensor([3, 1, 2]),))
def integer_tensor_arithmetic():
    def fn(x):
        return x // 2, x % 2, x << 1, x & 1, x.float() / 2, torch.div(x, 2, rounding_mode="floor")
    return fn


@program(lambda: (torch.tensor([True, False, True]),))
def bool_tensor_logic():
    def fn(m):
        return m & ~m, m | m, m ^ True, m.sum(), m.any(), m.all(), torch.logical_not(m)
    return fn


@program(lambda: (T(5),), lambda: (torch.zeros(5),))
def any_all_in_python_branches():
    def fn(x):
        if (x > 0).any() and not (x > 10).all():
            return x.clamp(min=0)
        return x * 0
    return fn


@program(lambda: (T(6),))
def argmax_used_as_a_python_index():
    def fn(x):
        i = int(x.argmax())
        j = x.argmin().item()
        return x[i] - x[j], [0, 1, 2, 3, 4, 5][i]
    return fn


@program(lambda: (T(4, 3),))
def iterate_rows_of_a_tensor():
    def fn(x):
        total = torch.zeros(3)
        for row in x:
            total = total + row
        return total, [r.sum() for r in x]
    return fn


@program(lambda: (T(3),))
def zip_strict_and_map_filter():
    def fn(x):
        pairs = list(zip([1, 2, 3], x.unbind(0), strict=True))
        kept = list(filter(lambda p: p[0] != 2, pairs))
        return [t * k for k, t in kept], list(map(abs, [-1, 2]))
    return fn


@program(lambda: (T(3),))
def exception_groups_caught():
    def fn(x):
        try:
            raise ExceptionGroup("many", [ValueError("a"), TypeError("b")])
        except* ValueError:
            x = x + 1
        except* TypeError:
            x = x * 2
        return x
    return fn


@program(lambda: (T(3),))
def with_statement_suppressing():
    def fn(x):
        with contextlib.suppress(KeyError):
            {}["missing"]
            x = x * 100
        return x + 1
    return fn


@program(lambda: (T(3),))
def exit_stack_of_contexts():
    def fn(x):
        with contextlib.ExitStack() as stack:
            stack.enter_context(torch.no_grad())
            y = x * 2
        return y, torch.is_grad_enabled()
    return fn
