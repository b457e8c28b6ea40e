"""Caller-provided lookasides (callable -> replacement) and the interpreter's own builtin lookasides."""
import math
import operator
import types

from compiler.interpreter import Tracked, interpret, run, with_provenance


def helper(x):
    return x + 1


class Box:
    def __init__(self, v):
        self.v = v

    @property
    def doubled(self):
        return self.v * 2


def test_native_function_replaced():
    def f(x):
        return math.sqrt(x) + 1

    assert interpret(f, 16, lookasides={math.sqrt: lambda x: 100}) == 101
    assert interpret(f, 16) == 5.0


def test_python_function_replaced_instead_of_interpreted():
    calls = []

    def replacement(x):
        calls.append(x)
        return -x

    def f(v):
        return [helper(i) for i in range(v)]

    assert interpret(f, 3, lookasides={helper: replacement}) == [0, -1, -2]
    assert calls == [0, 1, 2]


def test_method_of_builtin_type_replaced_for_bound_calls():
    seen = []

    def fake_append(lst, value):
        seen.append(value)
        lst.append(value * 10)

    def f():
        xs = []
        xs.append(1)
        xs.append(2)
        return xs

    assert interpret(f, lookasides={list.append: fake_append}) == [10, 20]
    assert seen == [1, 2]


def test_property_descriptor_replaced():
    def f(b):
        return b.doubled

    prop = Box.__dict__["doubled"]
    assert interpret(f, Box(4)) == 8
    assert interpret(f, Box(4), lookasides={prop: lambda obj: ("looked aside", obj.v)}) == ("looked aside", 4)


def test_operators_route_through_operator_lookasides():
    def f(a, b):
        return a + b, a * b, a[0] if isinstance(a, list) else a < b

    table = {operator.add: lambda a, b: ("add", a, b), operator.lt: lambda a, b: "lt"}
    assert interpret(f, 1, 2, lookasides=table) == (("add", 1, 2), 2, "lt")


def test_subscript_lookaside():
    def f(d):
        return d["k"]

    assert interpret(f, {"k": 1}, lookasides={operator.getitem: lambda c, k: f"got {k}"}) == "got k"


def test_with_provenance_lookaside_sees_argument_paths():
    seen = []

    @with_provenance
    def traced_sqrt(x: Tracked):
        seen.append(str(x.provenance))
        return Tracked(math.sqrt(x.value), x.provenance)

    def f(model):
        return math.sqrt(model.scale)

    traced = run(f, (types.SimpleNamespace(scale=9.0),), lookasides={math.sqrt: traced_sqrt})
    assert traced.value == 3.0
    assert seen == ["args[0].scale"]
    assert str(traced.provenance) == "args[0].scale"


def test_zero_argument_super_uses_the_interpreted_frame():
    class A:
        def who(self):
            return "A"

    class B(A):
        def who(self):
            return "B>" + super().who()

    def f():
        return B().who()

    assert interpret(f) == "B>A"


def test_locals_and_vars_see_interpreted_frame():
    def f(a):
        b = a * 2

        def g():
            return b
        return sorted(locals()), vars()["a"]

    assert interpret(f, 3) == f(3)


def test_sys_exc_info_inside_interpreted_handler():
    import sys

    def f():
        try:
            raise KeyError("k")
        except KeyError:
            inner = sys.exc_info()[0]
        return inner, sys.exc_info()[0]

    assert interpret(f) == (KeyError, None)


def test_functools_partial_of_python_function_is_interpreted():
    import functools

    from compiler.interpreter import events as ev

    def scaled(x, factor):
        return x * factor * G_FACTOR

    def f(x):
        return functools.partial(scaled, factor=2)(x)

    traced = run(f, (5,))
    assert traced.value == 30
    assert [e.name for e in traced.events if e.kind == ev.GLOBAL_READ] == ["G_FACTOR"]


G_FACTOR = 3


def test_lookaside_lookup_runs_no_user_code():
    calls = []

    class Callable:
        def __hash__(self):
            calls.append("hash")
            return 1

        def __eq__(self, other):
            calls.append("eq")
            return True

        def __call__(self):
            return "called"

    obj = Callable()

    def f():
        return obj()

    assert interpret(f, lookasides={math.sqrt: math.sqrt}) == "called"
    assert calls == []
    assert interpret(f, lookasides={obj: lambda: "looked aside"}) == "looked aside"


def test_setitem_lookaside_with_provenance():
    seen = []

    @with_provenance
    def tracked_setitem(container, key, value):
        seen.append((str(container.provenance), key.value, str(value.provenance)))
        container.value[key.value] = value.value

    def f(d, v):
        d["k"] = v
        return d

    assert interpret(f, {}, 5, lookasides={operator.setitem: tracked_setitem}) == {"k": 5}
    assert seen == [("args[0]", "k", "args[1]")]
