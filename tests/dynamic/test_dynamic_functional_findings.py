"""TL101/TL102/TL103 from what the functionalization learns (compiler/passes/functionalize.aliasing_events):
through analyzer.check and analyzer.jit(sharp_edges=...), at the user's lines, with eager's results kept."""
import warnings

import pytest
import torch
import torch.nn.functional as F

import compiler
from analyzer.diagnostics import Severity
from analyzer.dynamic import SharpEdgeError, SharpEdgeWarning, check, jit
from compiler.core import events as ev
from compiler.passes.functionalize import functionalize
from rules.compilers import BEHAVIOUR
from source_markers import marker_line

HERE = __file__


def _line(marker: str) -> int:
    return marker_line(HERE, marker)


def _found(diags, code):
    return [d for d in diags if d.code == code]


# ----- TL102: a write reaches an input through a view -----
def zero_row(x):
    row = x[0]
    row.zero_()  # tl102-row
    return x.sum()


def test_tl102_write_through_a_view_of_an_input():
    x = torch.ones(3, 3)
    diags = check(zero_row, x)
    (d,) = _found(diags, "TL102")
    assert (d.path, d.line, d.severity, d.origin) == (HERE, _line("tl102-row"), Severity.ERROR, "trace")
    assert "`x`" in d.message and "Tensor.__getitem__" in d.message and "Tensor.zero_" in d.message
    assert torch.equal(x[0], torch.zeros(3)) and torch.equal(x[1:], torch.ones(2, 3))  # eager's effect kept


def test_tl102_names_the_view_chain_and_a_keyword_input():
    def f(*, buf):
        buf.t()[1:].mul_(2)  # tl102-chain
        return buf

    (d,) = _found(check(f, buf=torch.ones(2, 3)), "TL102")
    assert d.line == _line("tl102-chain") and "`buf`" in d.message
    assert d.message.index("Tensor.t") < d.message.index("Tensor.__getitem__")  # root first


def test_tl102_not_for_direct_writes_fresh_tensors_or_may_view_results():
    def direct(x):
        x.add_(1)

    def fresh(x):
        y = x * 2
        y[0].zero_()
        return y

    def may_view(x):
        x.reshape(-1).add_(1)  # TL101's finding, not TL102's

    assert not _found(check(direct, torch.ones(2)), "TL102")
    assert check(fresh, torch.ones(2, 2)) == []
    diags = check(may_view, torch.ones(2, 2))
    assert [d.code for d in diags] == ["TL101"]


# ----- TL103: an input written in place and read again, in eager's order -----
def kv_update(q, k, v, idx, src):
    q.index_copy_(2, idx, src)  # tl103-q
    k.index_copy_(2, idx, src)  # tl103-k
    return F.scaled_dot_product_attention(q, k, v)  # tl103-read


def _kv():
    q, k, v = (torch.randn(1, 2, 4, 8) for _ in range(3))
    return q, k, v, torch.tensor([1, 3]), torch.randn(1, 2, 2, 8)


def test_tl103_kv_cache_update_then_attention_seed_1193():
    args = _kv()
    expected_args = [a.clone() for a in args]
    expected = kv_update(*expected_args)
    diags = check(kv_update, *args)
    found = _found(diags, "TL103")
    assert [(d.line, d.severity) for d in found] == [(_line("tl103-q"), Severity.WARNING),
                                                     (_line("tl103-k"), Severity.WARNING)]
    q_msg = found[0].message
    assert "`q`" in q_msg
    assert f"written by `Tensor.index_copy_` at line {_line('tl103-q')}" in q_msg
    assert f"read by `F.scaled_dot_product_attention` at line {_line('tl103-read')}" in q_msg
    assert q_msg.index("written by") < q_msg.index("read by")  # eager's order
    assert not _found(diags, "TL102")  # written directly, not through views
    # check() ran the call: the inputs changed as in eager
    for got, want in zip(args, expected_args):
        torch.testing.assert_close(got, want)


def test_tl103_written_twice_is_read_and_written():
    def f(x, y):
        x += y  # tl103-twice
        x.mul_(2)

    (d,) = _found(check(f, torch.ones(3), torch.ones(3)), "TL103")
    assert d.line == _line("tl103-twice")
    assert "written by `Tensor.__iadd__`" in d.message and "read and written by `Tensor.mul_`" in d.message


def test_tl103_not_for_the_out_parameter_idiom_or_disjoint_stores_in_a_loop():
    def out_param(result, x, w):
        result += x @ w
        return result

    def stores(out, xs):
        for i in range(out.shape[1]):
            out[:, i] = xs[i] * 2
        return out

    assert not _found(check(out_param, torch.zeros(2, 2), torch.ones(2, 3), torch.ones(3, 2)), "TL103")
    assert not _found(check(stores, torch.zeros(2, 3), torch.ones(3, 2)), "TL103")


def test_tl103_reads_inside_a_loop_and_a_module_buffer():
    def blend(a, b, n: int):
        for y in range(n):
            b[:, y] = a[:, -n + y] * (1 - y / n) + b[:, y] * (y / n)  # tl103-blend
        return b

    (d,) = _found(check(blend, torch.ones(2, 4), torch.zeros(2, 4), 3), "TL103")
    assert d.line == _line("tl103-blend") and "`b`" in d.message

    class Counter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("seen", torch.zeros(3))

        def forward(self, x):
            self.seen.add_(x)  # tl103-buffer
            return self.seen * 2

    m = Counter()
    (d,) = _found(check(m, torch.ones(3)), "TL103")
    assert d.line == _line("tl103-buffer") and "`self.seen`" in d.message
    assert torch.equal(m.seen, torch.ones(3))


# ----- TL101 agrees with the functionalization for these inputs -----
def reshape_add(x):
    y = x.reshape(-1)
    y.add_(1)  # tl101-site
    return x * 1


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_tl101_view_or_copy_matches_what_the_functionalization_writes_back(layout):
    x = torch.zeros(2, 3) if layout == "contiguous" else torch.zeros(3, 2).t()
    before = x.clone()
    seen = []
    jf = compiler.jit(reshape_add, observers=[seen.append])
    jf(x)
    view = layout == "contiguous"
    assert torch.equal(x, before + 1) is view  # eager's verdict, kept by the compiler
    (may_view,) = [e for e in seen if e.kind == ev.INPLACE_ON_MAY_VIEW]
    reaches = [e for e in seen if e.kind == ev.WRITE_REACHES_INPUT]
    assert may_view.details["returned_view"] is view
    assert bool(reaches) is view and all(e.details["may_view"] and e.details["input"] == "x" for e in reaches)
    writebacks = functionalize(compiler.last_traces(jf)[0]).writebacks
    assert len(writebacks) == int(view)
    (d,) = _found(check(reshape_add, x.clone() if view else torch.zeros(3, 2).t()), "TL101")
    assert d.line == _line("tl101-site")
    assert ("a view (the write reaches the input `x`)" in d.message) is view
    assert ("a copy (the write does not reach the original tensor)" in d.message) is not view


@pytest.mark.parametrize("code", ["TL101", "TL102", "TL103"])
def test_each_rules_documented_pattern_is_found_by_the_trace_check(code):
    ns: dict = {}
    exec(compile(BEHAVIOUR[code].source, HERE, "exec"), ns)
    args = [torch.ones(size) for size in BEHAVIOUR[code].calls[0:1] * ns["f"].__code__.co_argcount]
    assert code in {d.code for d in check(ns["f"], *args)}


# ----- analyzer.jit levels -----
def test_jit_warn_reports_once_and_keeps_eager_results():
    jf = jit(kv_update, sharp_edges="warn")
    args, expected_args = _kv(), None
    expected_args = [a.clone() for a in args]
    expected = kv_update(*expected_args)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        got = jf(*args)
        jf(*[a.clone() for a in args])  # cached: no new findings
    codes = sorted((str(w.message)[:5], w.lineno) for w in record if issubclass(w.category, SharpEdgeWarning))
    assert codes == [("TL103", _line("tl103-q")), ("TL103", _line("tl103-k"))]
    torch.testing.assert_close(got, expected)
    for a, b in zip(args, expected_args):
        torch.testing.assert_close(a, b)


def test_jit_allow_is_silent_and_error_refuses_before_running():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = torch.ones(3, 3)
        jit(zero_row)(x)  # sharp_edges="allow": nothing reported
        assert torch.equal(x[0], torch.zeros(3))
    x = torch.ones(3, 3)
    with pytest.raises(SharpEdgeError) as info:
        jit(zero_row, sharp_edges="error")(x)
    # the write through x[0] (TL102), and x written there then read by x.sum() (TL103, at the write)
    assert [(d.code, d.line) for d in info.value.diagnostics] == [("TL102", _line("tl102-row")),
                                                                  ("TL103", _line("tl102-row"))]
    assert torch.equal(x, torch.ones(3, 3))  # refused before the computation ran
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        jit(zero_row, sharp_edges="error", rules={"TL102": "warning", "TL103": "off"})(torch.ones(3, 3))
    assert [str(w.message)[:5] for w in record if issubclass(w.category, SharpEdgeWarning)] == ["TL102"]
