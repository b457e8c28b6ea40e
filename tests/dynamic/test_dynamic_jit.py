"""analyzer.dynamic.jit: levels, warn once per location, errors before any result (even under the user's
try/except), results equal to eager, option validation, modules; check()'s exception policy."""
import warnings

import pytest
import torch

import compiler
from analyzer.dynamic import SharpEdgeError, SharpEdgeWarning, check, jit
from source_markers import marker_line

HERE = __file__
offset = 1.5  # data global
LIN = torch.nn.Linear(3, 3)  # a never-rebound constant: its reads are not reported


def _line(marker: str) -> int:
    return marker_line(HERE, marker)


def _sharp_warnings(record):
    return [w for w in record if issubclass(w.category, SharpEdgeWarning)]


def adds_offset(x):
    return x + offset  # warn-site


def test_warn_once_per_location_not_per_call_nor_per_retrace():
    jf = jit(adds_offset, sharp_edges="warn")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        outs = [(jf(x), x) for x in (torch.randn(3), torch.randn(3), torch.randn(5), torch.randn(2, 2))]
    for out, x in outs:
        torch.testing.assert_close(out, adds_offset(x))
    assert compiler.cache_misses(jf) == 3  # three traces, each finds the read again
    got = _sharp_warnings(record)
    assert len(got) == 1
    assert (got[0].filename, got[0].lineno) == (HERE, _line("warn-site"))
    assert "TL201" in str(got[0].message) and "offset" in str(got[0].message)


def test_warn_never_about_values_the_interpreter_creates_for_itself():
    # today's thunder warns about bool, NoneType and NotImplementedType for `x + G`
    def f(x):
        return LIN(x + offset) + (x if x is not None else 0)

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        x = torch.randn(2, 3)
        torch.testing.assert_close(jit(f, sharp_edges="warn")(x), f(x))
    messages = [str(w.message) for w in _sharp_warnings(record)]
    assert len(messages) == 1 and "`offset`" in messages[0]
    assert not any(word in m for m in messages for word in ("bool", "NoneType", "NotImplemented", "_global_"))


def test_allow_reports_nothing_and_results_equal_eager():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        jf = jit(adds_offset)
        x = torch.randn(4)
        torch.testing.assert_close(jf(x), adds_offset(x))


def test_allow_and_warn_never_return_stale_results_after_a_global_changes():
    global offset
    for level in ("allow", "warn"):
        jf = jit(adds_offset, sharp_edges=level)
        x = torch.zeros(2)
        before = offset
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SharpEdgeWarning)
                torch.testing.assert_close(jf(x), adds_offset(x))
                offset = 4.0
                torch.testing.assert_close(jf(x), adds_offset(x))  # re-traced, not the 1.5 baked in
        finally:
            offset = before


def prints_inside_try(x):
    try:
        print("before")  # error-site
    except BaseException:
        return x * 0
    print("after the sharp edge")
    return x + 1


def test_error_is_raised_before_results_even_under_try_except(capsys):
    jf = jit(prints_inside_try, sharp_edges="error")
    with pytest.raises(SharpEdgeError) as info:
        jf(torch.ones(2))
    (d,) = info.value.diagnostics
    assert (d.code, d.path, d.line, d.severity.value) == ("TL204", HERE, _line("error-site"), "error")
    assert "after the sharp edge" not in capsys.readouterr().out  # the user's code stopped at the finding
    with pytest.raises(SharpEdgeError):  # nothing was cached: a second call raises again
        jf(torch.ones(2))


def writes_global_in_try(x):
    global offset
    try:
        offset = offset  # assigning the same value keeps the module intact for the other tests
    except Exception:
        pass
    return x


def test_error_for_a_global_write_is_not_catchable_by_interpreted_code():
    with pytest.raises(SharpEdgeError) as info:
        jit(writes_global_in_try, sharp_edges="error", rules={"TL201": "off"})(torch.ones(1))
    assert [d.code for d in info.value.diagnostics] == ["TL203"]


def reshape_add_(x):
    y = x.reshape(-1)
    y.add_(1)  # tl101-site
    return y


def test_tl101_is_an_error_by_default_even_with_allow():
    with pytest.raises(SharpEdgeError) as info:
        jit(reshape_add_)(torch.zeros(2, 2))
    assert [(d.code, d.line) for d in info.value.diagnostics] == [("TL101", _line("tl101-site"))]


def test_tl101_inside_the_users_try_except_still_raises():
    def f(x):
        try:
            y = x.reshape(-1)
            y.add_(1)
        except Exception:
            return x
        return y

    with pytest.raises(SharpEdgeError):
        jit(f)(torch.zeros(2, 2))


def test_tl101_can_be_turned_into_a_warning_and_results_then_equal_eager():
    jf = jit(reshape_add_, rules={"TL101": "warning"})
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for x in (torch.zeros(2, 2), torch.zeros(2, 2).t()):  # view, then copy
            expected_input, expected = x.clone(), reshape_add_(x.clone())
            torch.testing.assert_close(jf(x), expected)
            eager_input = expected_input.clone()
            reshape_add_(eager_input)
            torch.testing.assert_close(x, eager_input)  # the input changed (or not) exactly as in eager
    assert [str(w.message)[:5] for w in _sharp_warnings(record)] == ["TL101"]


def test_rules_override_per_code():
    jf = jit(adds_offset, sharp_edges="error", rules={"tl201": "warn"})
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        jf(torch.ones(1))
    assert len(_sharp_warnings(record)) == 1
    assert jit(adds_offset, sharp_edges="error", rules={"TL201": "allow"})(torch.ones(1)).item() == 2.5


@pytest.mark.parametrize("kwargs, match", [
    ({"sharp_edges": "loud"}, "sharp_edges"),
    ({"rules": {"TL999": "error"}}, "unknown rule"),
    ({"rules": {"TL201": "fatal"}}, "must be one of"),
    ({"rules": {"TL001": "error"}}, "no trace check"),
    ({"rules": ["TL201"]}, "dict"),
    ({"frontend": lambda *a, **k: None}, "front end"),
])
def test_bad_options_are_clear_errors(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        jit(adds_offset, **kwargs)


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x) * offset  # module-site


def test_modules_are_analyzed_and_match_eager():
    torch.manual_seed(0)
    m = Scaled()
    x = torch.randn(2, 3)
    jm = jit(m, sharp_edges="warn")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        out = jm(x)
    torch.testing.assert_close(out, m(x))
    assert [(w.lineno, str(w.message)[:5]) for w in _sharp_warnings(record)] == [(_line("module-site"), "TL201")]
    assert [d.code for d in check(m, x)] == ["TL201"]


def test_check_returns_findings_and_lets_the_users_exception_through_with_a_note():
    def f(x):
        y = x * offset
        raise ValueError("user's own error")

    with pytest.raises(ValueError, match="user's own error") as info:
        check(f, torch.ones(1))
    assert "TL201" in "".join(info.value.__notes__)
    diags = check(adds_offset, torch.ones(1))
    assert [d.to_json()["origin"] for d in diags] == ["trace"]


def test_check_never_raises_a_sharp_edge_error():
    diags = check(reshape_add_, torch.zeros(2, 2))
    assert [d.code for d in diags] == ["TL101"]


def test_an_error_finding_wins_over_a_later_user_exception_and_keeps_it_as_cause():
    def f(x):
        y = x.reshape(-1)
        y.add_(1)
        raise KeyError("later")

    with pytest.raises(SharpEdgeError) as info:
        jit(f)(torch.zeros(2, 2))
    assert isinstance(info.value.__cause__, KeyError)


def test_without_findings_the_users_exception_is_unchanged():
    def f(x):
        raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        jit(f, sharp_edges="error")(torch.zeros(1))


@pytest.mark.parametrize("bad", [None, 3, "not a function"])
def test_not_a_function_is_a_clear_type_error(bad):
    with pytest.raises(TypeError, match="function"):
        jit(bad)
    with pytest.raises(TypeError, match="function"):
        check(bad)


def test_compiler_observers_given_by_the_caller_still_get_the_compilers_events():
    seen = []
    with pytest.raises(SharpEdgeError):
        jit(reshape_add_, observers=[seen.append])(torch.zeros(2, 2))
    assert "inplace_on_may_view" in [e.kind for e in seen]
