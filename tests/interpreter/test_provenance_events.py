"""Provenance of values and the events observers receive (kinds, names, user file:line)."""
import random
import time
import types

import pytest

from compiler.interpreter import events as ev
from compiler.interpreter import provenance as pv
from compiler.interpreter import run

G = 3
G_TENSORLIKE = types.SimpleNamespace(weight=[1.0, 2.0])


def _line_of(fn, needle):
    import inspect
    lines, start = inspect.getsourcelines(fn)
    for k, text in enumerate(lines):
        if needle in text:
            return start + k
    raise AssertionError(needle)


def _events(traced, kind):
    return [e for e in traced.events if e.kind == kind]


# ----- provenance -----
def test_argument_attribute_and_item_paths():
    def f(model, batch, *, scale):
        return model.layer.weight, batch["x"][0], scale

    model = types.SimpleNamespace(layer=types.SimpleNamespace(weight="W"))
    traced = run(lambda m, b, scale: f(m, b, scale=scale), (model, {"x": [5]}), {"scale": 2})
    assert traced.value == ("W", 5, 2)
    weight, item, scale = traced.provenance.inputs
    assert str(weight) == "args[0].layer.weight"
    assert str(item) == "args[1]['x'][0]"
    assert str(scale) == "kwargs['scale']"


def test_global_closure_constant_and_opaque_provenance():
    captured = [1, 2]

    def f():
        return G, captured, 7, random.random(), G_TENSORLIKE.weight

    traced = run(f)
    g, c, k, r, w = traced.provenance.inputs
    assert isinstance(g, pv.Global) and str(g) == f"{f.__qualname__}.__globals__['G']"
    assert isinstance(c, pv.Closure) and c.name == "captured" and not c.internal
    assert isinstance(k, pv.Constant) and k.value == 7
    assert isinstance(r, pv.OpaqueResult) and r.callee.endswith("random")
    assert str(w).endswith("__globals__['G_TENSORLIKE'].weight")


def test_computed_values_know_their_roots():
    def f(a, b):
        return (a + G) * b

    traced = run(f, (1, 2))
    roots = {str(p) for p in traced.provenance.roots()}
    assert roots == {"args[0]", "args[1]", f"{f.__qualname__}.__globals__['G']"}


def test_provenance_flows_through_interpreted_calls_and_locals():
    def pick(seq, i):
        x = seq[i]
        return x

    def f(data):
        return pick(data, 1)

    traced = run(f, ([10, 20],))
    assert str(traced.provenance) == "args[0][1]"


def test_getattr_builtin_keeps_provenance():
    def f(obj):
        return getattr(obj, "real"), getattr(obj, "missing", None)

    traced = run(f, (3,))
    assert str(traced.provenance.inputs[0]) == "args[0].real"


def test_default_argument_provenance():
    def f(a, b=5):
        return b

    traced = run(f, (1,))
    assert isinstance(traced.provenance, pv.Default) and traced.provenance.name == "b"


# ----- events -----
def test_global_read_event_has_user_location():
    def f():
        return G + 1

    traced = run(f)
    (event,) = _events(traced, ev.GLOBAL_READ)
    assert event.name == "G" and event.value == 3
    assert event.location.filename == __file__
    assert event.location.lineno == _line_of(f, "return G + 1")
    assert event.location.function == f.__qualname__


def test_builtins_are_not_global_reads():
    def f(x):
        return len(x), isinstance(x, list)

    assert _events(run(f, ([1],)), ev.GLOBAL_READ) == []


def test_closure_read_external_vs_internal():
    outside = 10

    def jitted(x):
        def inner():
            return x + outside
        return inner()

    traced = run(jitted, (1,))
    reads = {e.name: e.details["internal"] for e in _events(traced, ev.CLOSURE_READ)}
    assert reads == {"x": True, "outside": False}


def test_nonlocal_write_and_delete_events():
    holder = []

    def make():
        lst = None

        def inner():
            nonlocal lst
            if lst is None:
                lst = holder
            lst.append("#")
            return lst
        return inner

    external = make()

    def jitted():
        a = 5

        def bar():
            nonlocal a
            del a
        bar()
        return external()

    traced = run(jitted)
    writes = _events(traced, ev.NONLOCAL_WRITE)
    deletes = _events(traced, ev.NONLOCAL_DELETE)
    assert [(e.name, e.details["internal"]) for e in writes] == [("lst", False)]
    assert [(e.name, e.details["internal"]) for e in deletes] == [("a", True)]
    assert writes[0].location.lineno == _line_of(make, "lst = holder")


def test_seed_nonlocal_del_raises_native_error_under_interpreter():
    def foo():
        a = 5

        def bar():
            nonlocal a
            del a
        bar()
        return a

    with pytest.raises(NameError) as native:
        foo()
    with pytest.raises(NameError) as interpreted:
        run(foo)
    assert type(interpreted.value) is type(native.value) is UnboundLocalError
    assert str(interpreted.value) == str(native.value)


def test_global_write_and_delete_events():
    ns = {}
    exec("X = 1\n"
         "def f():\n"
         "    global X, Y\n"
         "    X = X + 1\n"
         "    Y = 2\n"
         "    del Y\n"
         "    return X\n", ns)
    traced = run(ns["f"])
    assert traced.value == 2 and ns["X"] == 2 and "Y" not in ns
    assert [e.name for e in _events(traced, ev.GLOBAL_WRITE)] == ["X", "Y"]
    assert [e.name for e in _events(traced, ev.GLOBAL_DELETE)] == ["Y"]
    assert [e.location.lineno for e in _events(traced, ev.GLOBAL_WRITE)] == [4, 5]


@pytest.mark.parametrize("call,name", [
    (lambda: print("x", end=""), "print"),
    (lambda: random.random(), "random"),
    (lambda: random.randint(1, 3), "randint"),
    (lambda: time.time(), "time"),
    (lambda: globals(), "globals"),
    (lambda: locals(), "locals"),
    (lambda: vars(), "vars"),
])
def test_side_effect_calls(call, name, capsys):
    traced = run(call)
    events = _events(traced, ev.SIDE_EFFECT_CALL)
    assert len(events) == 1 and name in events[0].name
    assert _events(traced, ev.OPAQUE_CALL) == []


def test_opaque_call_event_and_pure_builtins_silent():
    import os
    import zlib

    def f(data):
        n = len(data) + max(data) + sum(data)
        return zlib.crc32(bytes(data)) + n, os.getcwd()

    traced = run(f, ([1, 2],))
    names = [e.name for e in _events(traced, ev.OPAQUE_CALL)]
    assert any("crc32" in n for n in names) and any("getcwd" in n for n in names)
    assert not any(n in ("len", "max", "sum", "bytes") for n in names)
    crc = next(e for e in _events(traced, ev.OPAQUE_CALL) if "crc32" in e.name)
    assert isinstance(crc.provenance, pv.OpaqueResult)


def test_events_from_nested_calls_point_at_the_callee_line():
    def helper():
        return G

    def f():
        return helper()

    traced = run(f)
    reads = _events(traced, ev.GLOBAL_READ)
    g_read = next(e for e in reads if e.name == "G")
    assert g_read.location.function == helper.__qualname__
    assert g_read.location.lineno == _line_of(helper, "return G")


def test_observers_receive_events_synchronously():
    seen = []

    def f():
        return G

    run(f, observers=(seen.append,))
    assert [e.kind for e in seen] == [ev.GLOBAL_READ]
    assert str(seen[0]).endswith(f"[global_read] G")


def test_observer_exception_propagates():
    def boom(event):
        raise RuntimeError("observer refused")

    def f():
        return G

    with pytest.raises(RuntimeError, match="observer refused"):
        run(f, observers=(boom,))


class _Money:
    def __init__(self, v):
        self.v = v

    def __add__(self, other):
        return _Money(self.v + other.v * G)

    def __iter__(self):
        yield from range(G)

    def __getitem__(self, i):
        return G + i


def test_special_methods_written_in_python_are_interpreted():
    def f(a, b):
        return (a + b).v, [x for x in a], a[1]

    traced = run(f, (_Money(1), _Money(2)))
    assert traced.value == (7, [0, 1, 2], 4)
    functions = {e.location.function for e in traced.events if e.kind == ev.GLOBAL_READ and e.name == "G"}
    assert functions == {"_Money.__add__", "_Money.__iter__", "_Money.__getitem__"}


def test_python_callbacks_of_builtins_are_interpreted():
    import functools

    def f(xs):
        ordered = sorted(xs, key=lambda v: v * G)
        doubled = list(map(lambda v: v + G, xs))
        biggest = max(xs, key=lambda v: -v if G else v)
        total = functools.reduce(lambda a, b: a + b + G, xs)
        return ordered, doubled, biggest, total

    traced = run(f, ([3, 1, 2],))
    assert traced.value == f([3, 1, 2])
    lambdas = [e for e in traced.events if e.kind == ev.GLOBAL_READ and e.name == "G"]
    assert len(lambdas) == 3 + 3 + 3 + 2  # one read per callback call
    assert all(e.location.function.endswith("<lambda>") for e in lambdas)


def test_python_iterables_consumed_by_builtins_are_interpreted():
    def f(m):
        return list(m), sum(m), sorted(m)

    traced = run(f, (_Money(0),))
    assert traced.value == ([0, 1, 2], 3, [0, 1, 2])
    iter_reads = [e for e in traced.events if e.kind == ev.GLOBAL_READ and e.location.function == "_Money.__iter__"]
    assert len(iter_reads) == 3


# ----- changes to objects that outlive the run (compiler: such a trace is single-use) -----
class _Holder:
    def __init__(self):
        self.log = []


OUTSIDE = _Holder()


def test_changes_to_objects_made_before_the_run_are_reported_and_the_runs_own_are_not():
    import collections

    def f(x):
        local, table, seen, queue = [], {}, set(), collections.deque()
        local.append(x)
        local += [x]
        table["a"] = x
        seen.add(x)
        queue.append(x)
        copy = list(local)
        copy.reverse()
        made = _Holder()  # constructed here: its attribute writes are the run's own
        made.log.append(x)
        made.extra = 1
        OUTSIDE.log.append(x)  # (the ones below outlive the run)
        OUTSIDE.log += [x]
        OUTSIDE.count = x
        setattr(OUTSIDE, "other", x)
        return len(local) + len(copy) + len(table) + len(seen) + len(queue)

    traced = run(f, (1,), track_fresh=True)
    assert traced.value == 7
    line = _line_of(f, "OUTSIDE.log.append")
    changes = [(e.name, e.location.lineno - line) for e in _events(traced, ev.CONTAINER_WRITE)]
    assert changes == [("append", 0), ("__iadd__", 1)]
    attrs = [(e.name, e.location.lineno - line, e.value is OUTSIDE) for e in _events(traced, ev.ATTRIBUTE_WRITE)]
    assert attrs == [("log", 1, True), ("count", 2, True), ("other", 3, True)]  # (+= stores the attribute too)
    untracked = run(f, (1,))  # without tracking every change is reported
    assert len(_events(untracked, ev.CONTAINER_WRITE)) > 2


def test_unbound_container_methods_are_reported_too():
    def f(x):
        list.append(OUTSIDE.log, x)
        dict.__setitem__(OUTSIDE.__dict__, "k", x)
        mine = []
        list.append(mine, x)
        return len(mine)

    traced = run(f, (1,), track_fresh=True)
    assert [e.name for e in _events(traced, ev.CONTAINER_WRITE)] == ["append", "__setitem__"]
