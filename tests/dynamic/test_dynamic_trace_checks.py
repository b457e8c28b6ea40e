"""Trace checks TL101 and TL201-TL204 through analyzer.dynamic.check: positive and negative cases with real
torch, the seed-132 closure verdicts, and the user's file:line on every finding."""
import math
import random
import time

import pytest
import torch

from analyzer.diagnostics import Severity
from analyzer.dynamic import check
from source_markers import marker_line

HERE = __file__
scale = 3.0  # data: lowercase and rebound below
scale = 3.0
WEIGHT = 2.0  # a never-rebound UPPER_CASE constant
counter = 0
model = torch.nn.Linear(3, 2)


def _line(marker: str) -> int:
    return marker_line(HERE, marker)


def _codes(diags):
    return sorted({d.code for d in diags})


def _x():
    return torch.randn(3, 3)


# ----- TL201 global-capture -----
def reads_data_global(x):
    return x * scale  # tl201-pos


def reads_structure_and_constants(x):
    return torch.sin(math.pi * x) * WEIGHT + _helper(x)


def _helper(x):
    return x + 1


def test_tl201_reports_a_data_global_at_the_users_line():
    diags = check(reads_data_global, _x())
    assert _codes(diags) == ["TL201"]
    d = diags[0]
    assert (d.path, d.line, d.origin, d.severity) == (HERE, _line("tl201-pos"), "trace", Severity.WARNING)
    assert "scale" in d.message and d.name == "global-capture"
    assert d.column == 16 and d.end_column == 21  # the `scale` of `return x * scale`


def test_tl201_ignores_modules_functions_and_never_rebound_constants():
    assert check(reads_structure_and_constants, _x()) == []


def test_tl201_reports_a_global_module_instance():
    def f(x):
        return model(x)

    diags = check(f, _x())
    assert _codes(diags) == ["TL201"] and "model" in diags[0].message
    # ...and nothing from inside torch.nn.Module.__call__ (its global hook dicts are torch's, not the user's)
    assert all(d.path == HERE for d in diags)


# ----- TL202 closure-capture (seed 132) -----
def make_reader():
    x = 5

    def foo(t):
        return t + x  # tl202-pos

    return foo


def test_tl202_closure_read_of_a_variable_captured_from_outside():
    diags = check(make_reader(), _x())
    assert [(d.code, d.line) for d in diags] == [("TL202", _line("tl202-pos"))]


def test_tl202_closure_over_a_variable_defined_inside_the_jitted_call_is_not_reported():
    def foo(x):
        def bar():
            return x

        return bar()

    assert check(foo, _x()) == []


def test_tl202_ignores_captured_functions():
    def make(fn):
        def wrapper(x):
            return fn(x)

        return wrapper

    assert check(make(torch.sin), _x()) == []


# ----- TL203 captured-write (seed 132) -----
def make_lst_inner():
    lst = None

    def inner(x):
        nonlocal lst
        if lst is None:
            lst = []  # tl203-nonlocal
        lst.append("#")
        return x + len(lst)

    return inner


def test_tl203_the_seeds_lst_example_writes_a_variable_captured_from_outside():
    diags = check(make_lst_inner(), _x())
    assert ("TL203", _line("tl203-nonlocal")) in [(d.code, d.line) for d in diags]
    assert "TL202" in _codes(diags)  # it also reads lst


global_lst = []


def unrelated():
    lst = None

    def inner():
        nonlocal lst
        if lst is None:
            lst = global_lst  # seed-latter-read
        lst.append("#")
        return lst

    return inner


def seed_latter(x):
    inner_fn = unrelated()  # its cell is created inside the jitted call
    lst1 = inner_fn()
    lst2 = inner_fn()
    print(lst1 is lst2)  # seed-latter-print
    return x + len(lst2)


def test_seed_132_latter_example_cells_created_inside_the_call_are_internal(capsys):
    global_lst.clear()
    diags = check(seed_latter, _x())
    assert [(d.code, d.line) for d in diags] == [("TL201", _line("seed-latter-read")),
                                                 ("TL204", _line("seed-latter-print"))]
    assert global_lst == ["#", "#"] and capsys.readouterr().out == "True\n"  # effects as in eager Python


def bumps_counter(x):
    global counter
    counter += 1  # tl203-global
    return x * 2


def test_tl203_global_write():
    diags = check(bumps_counter, _x())
    # reported once, as the write (the function declares it `global`), as the static check does
    assert [(d.code, d.line) for d in diags] == [("TL203", _line("tl203-global"))]


def test_tl203_global_delete():
    def f(x):
        global doomed
        del doomed
        return x

    globals()["doomed"] = 1
    assert [d.code for d in check(f, _x())] == ["TL203"]
    assert "doomed" not in globals()  # the delete happened, as in eager Python


def test_tl203_nonlocal_write_of_a_variable_inside_the_jitted_call_is_internal():
    def foo(x):
        a = 1

        def bar():
            nonlocal a
            a = 2

        bar()
        return x * a

    assert check(foo, _x()) == []


def seed_nonlocal_del(x):
    a = 5

    def bar():
        nonlocal a
        del a

    bar()
    return x + a


def test_seed_nonlocal_del_raises_what_eager_raises_and_is_not_reported():
    with pytest.raises(NameError) as eager:
        seed_nonlocal_del(_x())
    with pytest.raises(NameError) as traced:
        check(seed_nonlocal_del, _x())
    assert type(traced.value) is type(eager.value) and str(traced.value) == str(eager.value)
    assert "TL203" not in "".join(getattr(traced.value, "__notes__", []))


# ----- TL204 side-effect-call -----
def prints(x):
    print("tracing")  # tl204-print
    return x + 1


def draws(x):
    return x * random.random()  # tl204-random


def test_tl204_print_and_random(capsys):
    assert [(d.code, d.line) for d in check(prints, _x())] == [("TL204", _line("tl204-print"))]
    assert "tracing" in capsys.readouterr().out  # the call itself still ran, as eager would
    assert [(d.code, d.line) for d in check(draws, _x())] == [("TL204", _line("tl204-random"))]


@pytest.mark.parametrize("call", [
    lambda: time.time(), lambda: random.randint(1, 3), lambda: len(globals()), lambda: len(vars()),
])
def test_tl204_other_side_effects(call):
    def f(x):
        return x + 0 * call()

    diags = check(f, _x())
    assert [d.code for d in diags] == ["TL204"] and diags[0].path == HERE


def test_check_passes_keyword_arguments_through_even_one_named_fn():
    def f(x, fn=None):
        return x * fn

    assert check(f, _x(), fn=2.0) == []  # `fn=` reaches f, not check's own first parameter


def test_tl204_pure_math_is_not_a_side_effect():
    def f(x):
        return x * math.sqrt(2.0) + abs(-1)

    assert check(f, _x()) == []


# ----- TL101 reshape-inplace (from the compiler's inplace_on_may_view event) -----
def reshape_then_add_(x):
    y = x.reshape(-1)
    y.add_(1)  # tl101
    return y


def test_tl101_in_place_on_a_reshape_result_is_an_error_at_the_in_place_line():
    for x in (_x(), _x().t()):  # a view for contiguous input, a copy for the transposed one
        diags = check(reshape_then_add_, x)
        assert [(d.code, d.line, d.severity) for d in diags] == [("TL101", _line("tl101"), Severity.ERROR)]
    assert "a copy" in check(reshape_then_add_, _x().t())[0].message


def test_tl101_not_reported_for_view_or_out_of_place():
    def f(x):
        y = x.view(-1)
        y.add_(1)
        return x.reshape(-1) + 1

    # the write through x.view(-1) reaches the input and x is read again: TL102 and TL103, not TL101
    assert _codes(check(f, _x())) == ["TL102", "TL103"]


def test_findings_are_deduplicated_per_location():
    def f(x):
        for _ in range(4):
            x = x * scale
        return x

    assert len(check(f, _x())) == 1
