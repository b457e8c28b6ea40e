"""More programs from PyTorch's dynamo tests (test/dynamo: test_ctx_manager, test_autograd_function, test_functions,
test_modules), rewritten as small programs for compiler.jit in the format of dynamo_programs.py (a World built twice,
fresh arguments per call, changes between calls): objects with protocols (context managers and generators made
outside the compiled function, function defaults, lazy modules, custom autograd.Functions, autocast and grad mode).
CASES here are run by test_dynamo_protocols.py and bench/dynamo_port.py with dynamo_programs.CASES.
"""
from __future__ import annotations

import collections
import contextlib
import enum
import functools
import math

import torch
from torch.nn.modules.lazy import LazyModuleMixin

from dynamo_programs import Case, T, World

CASES: list[Case] = []


def program(*calls, refused=None):
    def register(build):
        CASES.append(Case(build.__name__, build, list(calls) or [lambda: ()] * 2, refused))
        return build
    return register


def G(*shape, seed=0):
    """T(...) requiring grad (a fresh leaf per call)."""
    return T(*shape, seed=seed).requires_grad_()


# ---------------------------------------------------------------------------------------------------
# test_ctx_manager: context managers made outside the compiled function, passed in
# ---------------------------------------------------------------------------------------------------

@contextlib.contextmanager
def logging_cm(box, t):
    """Its effects land in `box` (an argument, compared with eager's after every call)."""
    box.log.append(t.sin())
    try:
        yield t.cos() + 1
    finally:
        box.log.append(t.cos())


class Box:
    def __init__(self):
        self.log = []


def box():
    return Box()


def cm_arg(seed=0):
    """(x, the box the context manager logs into, the context manager): the box is an argument of its own, so the
    harness compares what it holds after every call with eager's."""
    t, b = T(2, seed=seed), box()
    return t, b, logging_cm(b, t)


def entered_cm_arg(seed=0):
    t, b, cm = cm_arg(seed)
    cm.__enter__()
    return t, b, cm


@program(lambda: cm_arg(0), lambda: cm_arg(1), lambda: cm_arg(2))
def contextmanager_as_argument_enter_and_exit():
    def fn(x, b, ctx):
        y = ctx.__enter__()
        ctx.__exit__(None, None, None)
        return x + y
    return fn


@program(lambda: cm_arg(0), lambda: cm_arg(1), lambda: cm_arg(2))
def contextmanager_as_argument_only_enter():
    def fn(x, b, ctx):
        y = ctx.__enter__()
        return x + y
    return fn


@program(lambda: entered_cm_arg(0), lambda: entered_cm_arg(1), lambda: entered_cm_arg(2))
def contextmanager_as_argument_only_exit():
    def fn(x, b, ctx):
        ctx.__exit__(None, None, None)
        return x.sin()
    return fn


@program(lambda: entered_cm_arg(0), lambda: entered_cm_arg(1))
def contextmanager_entered_before_entered_again():
    # (eager: a second __enter__ of the same generator context manager raises AttributeError/RuntimeError)
    def fn(x, b, ctx):
        y = ctx.__enter__()
        ctx.__exit__(None, None, None)
        return y
    return fn


@program(lambda: cm_arg(0), lambda: cm_arg(1))
def contextmanager_as_argument_in_a_with_block():
    def fn(x, b, ctx):
        with ctx as y:
            z = x * y
        return z + 1
    return fn


@program(lambda: cm_arg(0), lambda: cm_arg(1))
def contextmanager_as_argument_exit_with_an_exception():
    def fn(x, b, ctx):
        y = ctx.__enter__()
        try:
            raise ValueError("inside")
        except ValueError as e:
            swallowed = ctx.__exit__(type(e), e, e.__traceback__)
        return x + y, swallowed
    return fn


@program(lambda: (T(2), Holder(logging_cm(box(), T(2)))),
         lambda: (T(2, seed=1), Holder(logging_cm(box(), T(2, seed=1)))))
def contextmanager_held_by_an_object_argument():
    def fn(x, holder):
        with holder.cm as y:
            return x - y
    return fn


class Holder:
    def __init__(self, cm):
        self.cm = cm


@contextlib.contextmanager
def grad_mode_cm(enabled):
    before = torch.is_grad_enabled()
    try:
        yield torch._C._set_grad_enabled(enabled)
    finally:
        torch._C._set_grad_enabled(before)


class GradModeObject:
    """A class-based context manager switching grad mode (the one test_ctx_manager's tests define)."""

    def __init__(self, enabled):
        self.before = torch.is_grad_enabled()
        self.enabled = enabled

    def __enter__(self):
        torch._C._set_grad_enabled(self.enabled)

    def __exit__(self, *exc):
        torch._C._set_grad_enabled(self.before)


@program(lambda: (G(2, 3), grad_mode_cm(False)), lambda: (G(2, 3), grad_mode_cm(True)),
         lambda: (G(2, 3), grad_mode_cm(False)))
def generic_grad_mode_contextmanager_as_argument():
    def fn(x, ctx):
        with ctx:
            if torch.is_grad_enabled():
                z = x + 1000
            else:
                z = (x * 2).sin() + 3
        return z, torch.is_grad_enabled()
    return fn


@program(lambda: (G(2, 3), GradModeObject(False)), lambda: (G(2, 3), GradModeObject(True)))
def generic_grad_mode_object_as_argument():
    def fn(x, ctx):
        with ctx:
            z = x * 2 if torch.is_grad_enabled() else x.sin() + 3
        return z
    return fn


@program(lambda: (G(2, 3),), lambda: (T(2, 3),))
def generic_context_manager_made_inside():
    def fn(x):
        with grad_mode_cm(True):
            x = x + 1
            if torch.is_grad_enabled():
                x = x * 2
            with grad_mode_cm(False):
                if torch.is_grad_enabled():
                    x = x - 3
                x = x * 1.5
            x = torch.relu(x)
        return x - 1
    return fn


@program(lambda: (G(2, 3),), lambda: (T(2, 3),))
def generic_context_manager_class_made_inside():
    def fn(x):
        with GradModeObject(True):
            x = x + 1
            with GradModeObject(False):
                x = x * 1.5
        return x, x.requires_grad
    return fn


@program(lambda: (T(4),), lambda: (T(4, seed=1),))
def contextmanager_yielding_a_computed_value():
    @contextlib.contextmanager
    def compute_sin(x):
        try:
            yield x.sin()
        finally:
            pass

    def fn(x):
        with compute_sin(x) as y:
            return y.cos()
    return fn


@program(lambda: (T(1),), lambda: (T(1, seed=1),))
def contextmanager_changing_parent_nonlocals():
    state = {"z": 0, "k": 0}

    def build():
        @contextlib.contextmanager
        def ctx(x):
            try:
                state["k"] = 100
                yield x.sin()
            finally:
                state["z"] = state["k"] + 1

        return ctx

    def fn(x):
        with build()(x) as y:
            return y.cos(), state["k"]
    return World(fn, observe=lambda: dict(state))


@program(lambda: (T(3),), lambda: (T(3, seed=1),))
def contextmanager_with_a_python_effect_inside():
    log = []

    @contextlib.contextmanager
    def whoo(x):
        y = x.tan()
        try:
            log.append(x.sin())
            yield y
        finally:
            log.append(x.cos())

    def fn(x):
        y = x.sin()
        with whoo(x) as z:
            y = y + z.neg()
        return y + x.cos()
    return World(fn, observe=lambda: list(log))


@program(lambda: (T(3),), lambda: (T(3, seed=1),))
def contextmanager_entered_and_exited_by_hand():
    log = []

    @contextlib.contextmanager
    def whoo(x):
        try:
            log.append(x)
            yield x.sin()
        finally:
            log.append(x.cos())

    def fn(x):
        ctx = whoo(x)
        y = ctx.__enter__()
        ctx.__exit__(None, None, None)
        return y
    return World(fn, observe=lambda: list(log))


@program(lambda: (T(3),), lambda: (T(3, seed=1),))
def contextmanager_exit_in_finally():
    @contextlib.contextmanager
    def whoo(x):
        try:
            yield x + 1
        finally:
            pass

    def fn(x):
        ctx = whoo(x)
        try:
            y = ctx.__enter__()
            y = y * 2
        finally:
            ctx.__exit__(None, None, None)
        return y
    return fn


@program(lambda: (T(3),), lambda: (T(3, seed=1),), refused="is kept after the call")
def contextmanager_returned_after_entering():
    log = []

    @contextlib.contextmanager
    def whoo(x):
        try:
            log.append(x.sin())
            yield x.cos() + 1
        finally:
            log.append(x.cos())

    def fn(x):
        ctx = whoo(x)
        y = ctx.__enter__()
        return x + y, ctx
    return World(fn, observe=lambda: list(log))


@program(lambda: (T(2),), lambda: (T(2, seed=1),))
def contextmanager_suppressing_an_exception():
    log = []

    @contextlib.contextmanager
    def catching():
        try:
            yield
        except ZeroDivisionError as e:
            log.append(str(e))

    def fn(x):
        with catching():
            y = x + 1
            raise ZeroDivisionError("no")
        return y * 2
    return World(fn, observe=lambda: list(log))


@program(lambda: (T(2),), lambda: (T(2, seed=1),))
def contextmanager_rewrapping_an_exception():
    @contextlib.contextmanager
    def wrapping():
        try:
            yield
        except Exception as exc:
            raise RuntimeError(f"caught {type(exc).__name__}") from exc

    def fn(x):
        with wrapping():
            y = x * 2
            1 / 0
        return y
    return fn


@program(lambda: (T(2),), lambda: (T(2, seed=1),))
def contextmanager_yielding_twice_is_an_error():
    @contextlib.contextmanager
    def twice():
        yield
        yield

    def fn(x):
        with twice():
            y = x + 1
        return y
    return fn


@program(lambda: (T(2),), lambda: (T(2, seed=1),))
def contextmanager_never_yielding_is_an_error():
    @contextlib.contextmanager
    def never():
        if False:
            yield

    def fn(x):
        with never():
            y = x + 1
        return y
    return fn


@program(lambda: (T(2),), lambda: (T(2, seed=1),))
def contextmanager_keyword_arguments():
    @contextlib.contextmanager
    def woohoo(self, func, args, kwds):
        yield (self, func, args, kwds)

    def fn(x):
        with woohoo(self=11, func=22, args=33, kwds=44) as target:
            return x * sum(target)
    return fn


@program(lambda: (T(2),), lambda: (T(2, seed=1),))
def contextmanager_used_as_a_decorator_recursively():
    state = {"depth": 0, "entered": 0}

    @contextlib.contextmanager
    def counting():
        state["entered"] += 1
        state["depth"] += 1
        yield
        state["depth"] -= 1

    @counting()
    def recurse(x, n):
        return x if n == 0 else recurse(x + 1, n - 1)

    def fn(x):
        return recurse(x, 4)
    return World(fn, observe=lambda: dict(state))


@program(lambda: (T(2),), lambda: (T(2, seed=1),))
def contextlib_suppress_and_nullcontext():
    def fn(t):
        y = t.sin()
        with contextlib.suppress(ValueError):
            y = y + t.cos()
            raise ValueError
        with contextlib.nullcontext():
            y = y.tan()
        return y
    return fn


@program(lambda: (T(2),), lambda: (T(2, seed=1),))
def exit_stack_of_contextmanagers():
    log = []

    @contextlib.contextmanager
    def tagged(name):
        log.append(f"enter {name}")
        yield name
        log.append(f"exit {name}")

    def fn(x):
        with contextlib.ExitStack() as stack:
            names = [stack.enter_context(tagged(n)) for n in ("a", "b")]
            y = x * len(names)
        return y
    return World(fn, observe=lambda: list(log))


@program(lambda: (T(3),), lambda: (T(3, seed=1),))
def inactive_grad_context_made_before_use():
    def fn(x):
        x = x + 1
        ctx = torch.set_grad_enabled(True)
        with ctx:
            x = x + 1
        return x, x.requires_grad
    return fn


@program(lambda: (G(3),), lambda: (T(3),))
def grad_mode_decorator_around_inner_function():
    def fn(x):
        def inner(x):
            return x.sin()

        with torch.enable_grad():
            wrapped = torch.no_grad()(inner)
            assert torch.is_grad_enabled()
        with torch.enable_grad():
            return wrapped(x), inner(x)
    return fn


@program(lambda: (G(3),), lambda: (G(3, seed=1),))
def nested_grad_modes_left_as_found():
    def fn(x):
        before = torch.is_grad_enabled()
        with torch.set_grad_enabled(False):
            with torch.set_grad_enabled(True):
                x = torch.mul(x, 5)
                x = torch.sqrt(x.abs())
                assert torch.is_grad_enabled()
            assert not torch.is_grad_enabled()
        assert torch.is_grad_enabled() == before
        return x
    return fn


@program(lambda: (T(3, 4), T(3, 4, seed=1)))
def grad_mode_switched_and_restored_by_hand():
    def fn(a, b):
        prev = torch.is_grad_enabled()
        torch.set_grad_enabled(False)
        a = a + 1
        ret = a + b
        torch.set_grad_enabled(prev)
        return ret
    return fn


@program(lambda: (G(4, 4), G(4, 4, seed=1), T(4)))
def no_grad_helper_inlined_into_caller():
    def gn(z):
        with torch.no_grad():
            return torch.sin(z)

    def fn(x, y, z):
        a = torch.mm(x, y)
        z = gn(z)
        return a, z
    return fn


@program(lambda: (T(3, 3, seed=4), T(3, 3, seed=5)), lambda: (T(3, 3, seed=6), T(3, 3, seed=7)))
def autocast_in_an_inlined_helper_returning_inside():
    def gn(x, y):
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            z = torch.mm(x, y)
            return torch.sin(z)

    def fn(x, y):
        z = torch.mm(x, y)
        return z + gn(x, y)
    return fn


@program(lambda: (T(3, 3, seed=4), T(3, 3, seed=5)))
def autocast_helper_with_a_data_dependent_read():
    def gn(x, y):
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            z = torch.mm(x, y)
            if z.sum() > -1e9:  # (a graph break under dynamo, a segment here)
                z = z * 2
            return torch.sin(z)

    def fn(x, y):
        z = torch.mm(x, y)
        return z + gn(x, y)
    return fn


@program(lambda: (T(8, 8, seed=1), T(8, 8, seed=2)))
def autocast_disabled_inside_enabled():
    def mm(a, b):
        return torch.mm(a, b)

    def fn(a, b):
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=False):
                g = torch.mm(a, b)
                with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
                    f1 = mm(a, b)
            f = mm(a, b)
            assert f.dtype == f1.dtype
        return f, g, torch.mm(a, b)
    return fn


@program(lambda: (T(8, 8, seed=1), T(8, 8, seed=2)))
def autocast_is_enabled_query_inside():
    def fn(a, b):
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            c = torch.mm(a, b)
            if torch.is_autocast_cpu_enabled():
                c = c + 1
        return c, torch.mm(a, b)
    return fn


@program(lambda: (T(2, 3),))
def autocast_decorated_function():
    @torch.autocast(device_type="cpu", dtype=torch.bfloat16)
    def mm_low(a, b):
        return torch.mm(a, b)

    def fn(a):
        b = a.t()
        return mm_low(a, b), torch.mm(a, b)
    return fn


@program(lambda: (T(2, 2),), lambda: (T(2, 2, seed=1),))
def default_dtype_contextmanager():
    @contextlib.contextmanager
    def default_dtype(dtype):
        old = torch.get_default_dtype()
        try:
            torch.set_default_dtype(dtype)
            yield
        finally:
            torch.set_default_dtype(old)

    def fn(x):
        with default_dtype(torch.float64):
            y = torch.tensor([3.0, 3.0 + 5.0j])
            z = torch.ones(2)
        return x.sum() + z.sum(), y, z
    return fn


@program(lambda: (T(2, 2),))
def saved_tensors_hooks_disabled_around_ops():
    def fn(x):
        @torch.autograd.graph.disable_saved_tensors_hooks("not supported here")
        def f(a, b):
            return a + b

        return f(x, torch.ones(1))
    return fn


# ---------------------------------------------------------------------------------------------------
# test_functions: generators made outside, defaults, closures
# ---------------------------------------------------------------------------------------------------

class Feed:
    def __init__(self, gen):
        self.gen = gen


def numbers(t, n=3):
    for k in range(n):
        yield t * k


@program(lambda: (T(2), Feed(numbers(T(2)))), lambda: (T(2, seed=1), Feed(numbers(T(2, seed=1)))))
def generator_made_outside_consumed_by_a_for_loop():
    def fn(x, feed):
        total = x
        for v in feed.gen:
            total = total + v
        return total
    return fn


@program(lambda: (T(2), Feed(numbers(T(2), 5))), lambda: (T(2, seed=1), Feed(numbers(T(2, seed=1), 5))))
def generator_made_outside_advanced_twice():
    def fn(x, feed):
        a = next(feed.gen)
        b = next(feed.gen)
        return x + a + b
    return fn


@program(lambda: (T(2), Feed(numbers(T(2)))), lambda: (T(2, seed=1), Feed(numbers(T(2, seed=1)))))
def generator_made_outside_summed():
    def fn(x, feed):
        return x + sum(feed.gen)
    return fn


@program(lambda: (T(2),), lambda: (T(2, seed=1),))
def generator_made_inside_with_send():
    def acc():
        total = 0
        while True:
            got = yield total
            total = total + got

    def fn(x):
        g = acc()
        next(g)
        g.send(x)
        return g.send(x * 2)
    return fn


@program(lambda: (T(2, 2),), lambda: (T(2, 2),), lambda: (T(2, 2),))
def method_tensor_default_replaced():
    class Holder:
        def f(self, x, y=torch.ones(2, 2)):
            return x + y

    h = Holder()

    def fn(x):
        return h.f(x)

    def change(i):
        Holder.f.__defaults__ = (torch.full((2, 2), float(i * 5)),)
    return World(fn, change=change)


@program(lambda: (T(3),), lambda: (T(3),), lambda: (T(3),))
def closure_function_default_replaced():
    def helper(x, scale=2.0, *, shift=0.0):
        return x * scale + shift

    def fn(x):
        return helper(x)

    def change(i):
        if i == 1:
            helper.__defaults__ = (3.0,)
        else:
            helper.__kwdefaults__ = {"shift": 1.5}
    return World(fn, change=change)


@program(lambda: (T(3),), lambda: (T(3),))
def default_tensor_changed_in_place():
    def helper(x, bias=torch.zeros(3)):
        return x + bias

    def fn(x):
        return helper(x)

    def change(i):
        helper.__defaults__[0].add_(4)
    return World(fn, change=change)


@program(lambda: (T(3),), lambda: (T(3),))
def staticmethod_default_replaced():
    class Ops:
        @staticmethod
        def scale(x, by=2):
            return x * by

    def fn(x):
        return Ops.scale(x)

    def change(i):
        Ops.scale.__defaults__ = (7,)
    return World(fn, change=change)


@program(lambda: (T(3),), lambda: (T(3),))
def partial_of_a_function_with_defaults():
    def helper(x, a, b=1.0):
        return x * a + b

    part = functools.partial(helper, a=3.0)

    def fn(x):
        return part(x)

    def change(i):
        helper.__defaults__ = (10.0,)
    return World(fn, change=change)


@program(lambda: (T(3),), lambda: (T(3),))
def lambda_default_captures_loop_value():
    fns = [lambda x, k=k: x * k for k in range(3)]

    def fn(x):
        return [f(x) for f in fns]
    return fn


@program(lambda: (T(4),), lambda: (T(4, seed=1),))
def update_global_through_contextmanager():
    state = {"v": 0}

    @contextlib.contextmanager
    def bump(x):
        try:
            state["v"] += 1
            yield x * state["v"]
        finally:
            pass

    def fn(x):
        with bump(x) as a:
            return x * a
    return World(fn, observe=lambda: dict(state))


# ---------------------------------------------------------------------------------------------------
# test_modules: lazy modules
# ---------------------------------------------------------------------------------------------------

class LazyParamAndBuffer(LazyModuleMixin, torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.param = torch.nn.UninitializedParameter()
        self.buffer = torch.nn.UninitializedBuffer()

    def initialize_parameters(self, x):
        with torch.no_grad():
            self.param.materialize(x.shape)
            self.buffer.materialize(x.shape)
            self.param.fill_(1.5)
            self.buffer.fill_(-0.5)

    def forward(self, x):
        return x.sin() + self.param + self.buffer


class LazyOverList(LazyModuleMixin, torch.nn.Module):
    def initialize_parameters(self, inp):
        with torch.no_grad():
            self._param = torch.nn.Parameter(torch.empty(inp[0].shape).fill_(0.5))

    def forward(self, inp):
        x = 0
        for i in range(len(inp)):
            x = x + inp[i]
        return x * self._param


class LazyWithLazyChild(LazyModuleMixin, torch.nn.Module):
    def initialize_parameters(self, inp):
        with torch.no_grad():
            self.layer = LazyOverList()

    def forward(self, inp):
        return self.layer(inp)


class LazyWithTwoInputs(LazyModuleMixin, torch.nn.Module):
    def initialize_parameters(self, x, y):
        with torch.no_grad():
            self._weight = torch.nn.Parameter(torch.full(x.shape, 0.25))
            self._bias = torch.nn.Parameter(torch.full(y.shape, 2.0))

    def forward(self, x, y):
        return x * self._weight + y * self._bias


Pair = collections.namedtuple("Pair", "x y")


class LazyOverNamedTuple(LazyModuleMixin, torch.nn.Module):
    def initialize_parameters(self, inp):
        with torch.no_grad():
            self._param = torch.nn.Parameter(torch.empty(inp.x["a"][0].shape).fill_(0.5))

    def forward(self, inp):
        return inp.x["a"][0] * self._param + inp.y


class LazyBecomesLinear(LazyModuleMixin, torch.nn.Linear):
    """A lazy module that turns into its eager class (cls_to_become) on the first call."""
    cls_to_become = torch.nn.Linear

    def __init__(self, out_features):
        super().__init__(0, out_features)
        self.weight = torch.nn.UninitializedParameter()
        self.bias = torch.nn.UninitializedParameter()

    def initialize_parameters(self, x):
        with torch.no_grad():
            self.in_features = x.shape[-1]
            self.weight.materialize((self.out_features, self.in_features))
            self.bias.materialize((self.out_features,))
            self.weight.fill_(0.1)
            self.bias.fill_(0.2)


class LazyMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.LazyLinear(10)
        self.relu1 = torch.nn.ReLU()
        self.fc2 = torch.nn.LazyLinear(1)
        self.relu2 = torch.nn.ReLU()

    def forward(self, x):
        return self.relu2(self.fc2(self.relu1(self.fc1(x))))


def _lazy(name, make, *calls):
    def build():
        torch.manual_seed(0)
        return make()
    build.__name__ = name
    program(*calls)(build)


_lazy("lazy_module_param_and_buffer", LazyParamAndBuffer, lambda: (T(2, 3),), lambda: (T(2, 3, seed=1),))
_lazy("lazy_module_over_a_list", LazyOverList, lambda: ([T(2, 2), T(2, 2, seed=1)],),
      lambda: ([T(2, 2, seed=2), T(2, 2, seed=3)],))
_lazy("lazy_module_with_lazy_child", LazyWithLazyChild, lambda: ([T(2, 2), T(2, 2, seed=1)],),
      lambda: ([T(2, 2, seed=2), T(2, 2, seed=3)],))
_lazy("lazy_module_with_two_inputs", LazyWithTwoInputs, lambda: (T(2, 3), T(3)), lambda: (T(2, 3, seed=1), T(3)))
_lazy("lazy_module_over_a_namedtuple", LazyOverNamedTuple,
      lambda: (Pair(x={"a": [T(3), T(3, seed=1)]}, y=T(3, seed=2)),),
      lambda: (Pair(x={"a": [T(3, seed=3), T(3, seed=4)]}, y=T(3, seed=5)),))
_lazy("lazy_module_becoming_linear", lambda: LazyBecomesLinear(4), lambda: (T(2, 3),), lambda: (T(2, 3, seed=1),))
_lazy("lazy_mlp", LazyMLP, lambda: (T(4, 5),), lambda: (T(4, 5, seed=1),))
_lazy("lazy_conv_and_batchnorm", lambda: torch.nn.Sequential(torch.nn.LazyConv2d(4, 3), torch.nn.LazyBatchNorm2d()),
      lambda: (T(2, 3, 8, 8),), lambda: (T(2, 3, 8, 8, seed=1),))


@program(lambda: (T(2, 3),), lambda: (T(2, 3, seed=1),))
def lazy_module_reached_as_a_global_of_a_function():
    torch.manual_seed(0)
    layer = LazyOverList()

    def fn(x):
        return layer([x, x]) + 1
    return fn


@program(lambda: (T(2, 3),), lambda: (T(2, 3, seed=1),))
def lazy_module_called_twice_with_other_shape_refused_as_eager():
    torch.manual_seed(0)
    layer = LazyWithTwoInputs()

    def fn(x):
        return layer(x, x.sum(0))
    return fn


# ---------------------------------------------------------------------------------------------------
# test_autograd_function
# ---------------------------------------------------------------------------------------------------

class AddSelf(torch.autograd.Function):
    @staticmethod
    def forward(ctx, foo):
        return foo + foo

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class SaveForBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, foo):
        result = foo + foo
        result = result + foo
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * math.sqrt(result.numel())


class LinearWithSetupContext(torch.autograd.Function):
    @staticmethod
    def forward(inp, weight, bias):
        out = inp.mm(weight.t())
        if bias is not None:
            out = out + bias.unsqueeze(0).expand_as(out)
        return out

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad_output):
        inp, weight, bias = ctx.saved_tensors
        return grad_output.mm(weight), grad_output.t().mm(inp), None if bias is None else grad_output.sum(0)


class TwoClones(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x.clone(), x.clone()

    @staticmethod
    def backward(ctx, g1, g2):
        return g1 if g2 is None else (g2 if g1 is None else g1 + g2)


class SaveAndMark(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        with torch.no_grad():
            ctx.save_for_backward(x)
            ctx.mark_non_differentiable(x)
            return x

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class TimesThreeInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(3)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * 3


class Shake(torch.autograd.Function):
    @classmethod
    def forward(cls, ctx, foo):
        return foo + foo

    @classmethod
    def backward(cls, ctx, grad_output):
        return grad_output


class Which(enum.Enum):
    SIN = 0
    COS = 1


class ByEnum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, which):
        return x.sin() if which is Which.SIN else x.cos()

    @staticmethod
    def backward(ctx, g):
        return g, None


class ScaleGradOnce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        return grad * 0.5


class CtxAttribute(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.scale = 3
        return x.sin()

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.scale


class KeywordOnlyForward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x * scale

    @staticmethod
    def backward(ctx, g):
        return g * ctx.scale, None


@program(lambda: (G(2, 3),), lambda: (T(2, 3),))
def autograd_function_instance_apply_in_module():
    class M(torch.nn.Module):
        def forward(self, foo):
            return AddSelf().apply(foo)
    return M()


@program(lambda: (G(2, 3),), lambda: (T(2, 3),))
def autograd_function_apply_stored_on_module():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fn = AddSelf.apply

        def forward(self, foo):
            return self.fn(foo)
    return M()


@program(lambda: (G(10),), lambda: (T(10),), lambda: (G(10, seed=1),))
def autograd_function_saving_for_backward():
    def fn(x):
        return SaveForBackward.apply(x)
    return fn


@program(lambda: (G(2, 2).double(), G(3, 2, seed=1).double()), lambda: (T(2, 2).double(), T(3, 2, seed=1).double()))
def autograd_function_with_setup_context():
    def fn(inp, weight):
        return LinearWithSetupContext.apply(inp, weight, None)
    return fn


@program(lambda: (G(2, 2),))
def autograd_function_two_outputs_no_materialized_grads():
    def fn(x):
        return TwoClones.apply(x)
    return fn


@program(lambda: (T(1),), lambda: (G(1),))
def autograd_function_save_and_mark_non_differentiable():
    def fn(x):
        return SaveAndMark.apply(x)
    return fn


@program(lambda: (G(2, 2),), lambda: (G(2, 2, seed=1),))
def autograd_function_mark_dirty_on_an_intermediate():
    def fn(w):
        y = torch.ones(2, 2) @ w
        TimesThreeInPlace.apply(y)
        return y.sum()
    return fn


@program(lambda: (G(2),))
def autograd_function_mark_dirty_on_a_view_of_a_leaf_raises():
    def fn(x):
        return TimesThreeInPlace.apply(x.view_as(x))
    return fn


@program(lambda: (G(4, 4),))
def autograd_function_classmethods():
    def fn(x):
        return Shake.apply(x)
    return fn


@program(lambda: (G(2, 3), Which.SIN), lambda: (G(2, 3), Which.COS))
def autograd_function_enum_argument():
    def fn(x, which):
        return ByEnum.apply(x, which)
    return fn


@program(lambda: (G(3),))
def autograd_function_once_differentiable():
    def fn(x):
        return ScaleGradOnce.apply(x)
    return fn


@program(lambda: (G(3),), lambda: (T(3),))
def autograd_function_ctx_attribute():
    def fn(x):
        return CtxAttribute.apply(x)
    return fn


@program(lambda: (G(3),), lambda: (G(3, seed=1),))
def autograd_function_non_tensor_argument_by_keyword_position():
    def fn(x):
        return KeywordOnlyForward.apply(x, 2.5) + KeywordOnlyForward.apply(x, 4)
    return fn


@program(lambda: (), lambda: (), lambda: ())
def autograd_function_on_a_captured_leaf():
    a = T(3).requires_grad_()

    class DoubleFn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    def fn():
        return DoubleFn.apply(a)

    def change(i):
        with torch.no_grad():
            a.add_(i)  # (the same leaf, new values: the cached trace must compute again)
    return World(fn, change=change)


@program(lambda: (T(3),), lambda: (T(3, seed=1),))
def autograd_function_on_a_captured_global_tensor_and_an_argument():
    w = T(3, seed=9).requires_grad_()

    def fn(x):
        return AddSelf.apply(w) * x + SaveForBackward.apply(x)
    return fn


@program(lambda: (G(3),), lambda: (T(3),))
def autograd_function_inside_no_grad():
    def fn(x):
        with torch.no_grad():
            y = AddSelf.apply(x)
        return y, AddSelf.apply(x)
    return fn


@program(lambda: (G(3),))
def autograd_function_forward_with_a_python_effect():
    log = []

    class Logged(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            log.append(tuple(x.shape))
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    def fn(x):
        return Logged.apply(x)
    return World(fn, observe=lambda: list(log))


# ---------------------------------------------------------------------------------------------------
# more of the same protocols, in the shapes dynamo's tests combine them
# ---------------------------------------------------------------------------------------------------

@program(lambda: (T(2),), lambda: (T(2, seed=1),))
def contextmanager_made_inside_entered_and_dropped():
    log = []

    @contextlib.contextmanager
    def whoo(x):
        try:
            log.append(x.sin())
            yield x.cos() + 1
        finally:
            log.append(x.cos())  # (eager: when the call's frame dies and drops the generator)

    def fn(x):
        ctx = whoo(x)
        y = ctx.__enter__()
        return x + y
    return World(fn, observe=lambda: list(log))


@program(lambda: (T(2), Feed(numbers(T(2)))), lambda: (T(2, seed=1), Feed(numbers(T(2, seed=1)))))
def generator_made_outside_delegated_to_with_yield_from():
    def fn(x, feed):
        def relay():
            yield from feed.gen

        total = x
        for v in relay():
            total = total * 0.5 + v
        return total
    return fn


@program(lambda: (T(2), Feed(numbers(T(2), 4))), lambda: (T(2, seed=1), Feed(numbers(T(2, seed=1), 4))))
def generator_made_outside_zipped_and_enumerated():
    def fn(x, feed):
        out = x
        for i, (v, w) in enumerate(zip(feed.gen, (x, x + 1))):
            out = out + i * v + w
        return out
    return fn


@program(lambda: cm_arg(0), lambda: cm_arg(3))
def contextmanager_as_argument_around_a_data_dependent_read():
    def fn(x, b, ctx):
        y = x * 2
        with ctx as z:
            if (y + z).sum() > 0:  # (a segment ends here, inside the with-block)
                y = y + z
            else:
                y = y - z
        return y
    return fn


@program(lambda: cm_arg(0), lambda: cm_arg(1))
def contextmanager_as_argument_after_an_in_place_write():
    def fn(x, b, ctx):
        x.mul_(3)  # (runs for real before the generator's code reads x)
        with ctx as z:
            return x + z
    return fn


@program(lambda: (G(3),), lambda: (G(3, seed=1),))
def autograd_function_with_an_effect_after_traced_ops():
    log = []

    class Logged(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            log.append(float(x.sum()))
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    def fn(x):
        y = x.sin() + 1
        z = Logged.apply(y)
        return z.cos(), Logged.apply(z)
    return World(fn, observe=lambda: list(log))


@program(lambda: (T(3),), lambda: (T(3, seed=1),), lambda: (T(3, seed=2),))
def mutable_default_list_accumulates():
    def helper(x, acc=[]):  # noqa: B006 - the Python pitfall itself: the default list lives across calls
        acc.append(x.sum())
        return len(acc)

    def fn(x):
        return x * helper(x)
    return World(fn, observe=lambda: list(helper.__defaults__[0]))


@program(lambda: (T(3),), lambda: (T(3),))
def default_replaced_on_a_bound_method_function():
    class Model:
        def scale(self, x, k=2.0):
            return x * k

    m = Model()
    bound = m.scale

    def fn(x):
        return bound(x)

    def change(i):
        Model.scale.__defaults__ = (-1.0,)
    return World(fn, change=change)


@program(lambda: (T(2, 2),), lambda: (T(2, 2, seed=1),))
def grad_mode_object_made_inside_graph_break_in_enter():
    class Breaking(GradModeObject):
        def __enter__(self):
            super().__enter__()
            return torch.is_grad_enabled()

    def fn(x):
        with Breaking(False) as on:
            y = x * 2
        return y, on, torch.is_grad_enabled()
    return fn


@program(lambda: (G(3),), lambda: (G(3, seed=1).neg(),), lambda: (T(3),))
def autograd_function_forward_branching_on_values():
    class SignScale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.k = 2.0 if x.sum() > 0 else 3.0
            return x * ctx.k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k

    def fn(x):
        return SignScale.apply(x + 1) * 2
    return fn


@program(lambda: (T(2),), lambda: (T(2, seed=1),), refused="is kept after the call")
def generator_made_inside_stored_outside():
    keep = []

    def gen(x):
        yield x + 1
        yield x + 2

    def fn(x):
        g = gen(x)
        keep.append(g)
        return next(g)
    return World(fn, observe=lambda: len(keep))


class LazySumOfLists(LazyModuleMixin, torch.nn.Module):
    def initialize_parameters(self, xs, ys):
        with torch.no_grad():
            self._px = torch.nn.Parameter(torch.full(xs[0].shape, 0.5))
            self._py = torch.nn.Parameter(torch.full(ys[0].shape, 0.25))

    def forward(self, xs, ys):
        total = 0
        for t in list(xs) + list(ys):
            total = total + t
        return total * self._px + self._py


class LazyPassingKeywords(LazyModuleMixin, torch.nn.Module):
    def initialize_parameters(self, *args, **kwargs):
        with torch.no_grad():
            self.layer = LazySumOfLists()

    def forward(self, xs, ys):
        return self.layer(xs, ys=ys)


class LazyFailingInit(LazyModuleMixin, torch.nn.Module):
    def initialize_parameters(self, *args, **kwargs):
        self.missing_counter += 1  # (AttributeError on every call, in eager too: it never initializes)

    def forward(self, x):
        return x * 2


class LazyParent(LazyModuleMixin, torch.nn.Module):
    def impl(self, x):
        return x.cos() + self._val


class LazyChildWithSuper(LazyParent):
    def initialize_parameters(self, x):
        with torch.no_grad():
            self._val = torch.nn.Parameter(torch.ones(2, 2) * 3)

    def forward(self, x):
        return super().impl(x.sin())


class LazyOverASlice(LazyModuleMixin, torch.nn.Module):
    def initialize_parameters(self, inp):
        with torch.no_grad():
            self.layer = LazyOverList()

    def forward(self, inp):
        return self.layer(inp[:-1])


_lazy("lazy_module_passing_keywords_to_a_lazy_child", LazyPassingKeywords,
      lambda: ([T(2, 2), T(2, 2, seed=1)], [T(2, 2, seed=2)]), lambda: ([T(2, 2, seed=3)], [T(2, 2, seed=4)]))
_lazy("lazy_module_whose_initialization_fails", LazyFailingInit, lambda: (T(2),), lambda: (T(2, seed=1),))
_lazy("lazy_child_calling_a_parent_method_through_super", LazyChildWithSuper, lambda: (T(2, 2),),
      lambda: (T(2, 2, seed=1),))
_lazy("lazy_module_over_a_slice_of_its_input", LazyOverASlice, lambda: ([T(2), T(2, seed=1), T(2, seed=2)],),
      lambda: ([T(2, seed=3), T(2, seed=4)],))
