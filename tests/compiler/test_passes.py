"""DCE and CSE: they shrink traces, and never change what the caller observes."""
import torch
import torch.nn.functional as F

import compiler


def _trace_after(jf, header_start):
    return next(t for t in compiler.last_traces(jf) if t.header.startswith(header_start))


def _ops(trace):
    return [b.symbol.name for b in trace.bsyms]


def test_dce_removes_unused_ops_and_keeps_effects():
    def fn(x):
        unused = torch.exp(x) * 3  # dead
        x.mul_(2)  # in-place on an input: a side effect, kept
        torch.rand(2)  # consumes RNG state: kept so later random numbers match eager
        return x + 1

    jf = compiler.jit(fn)
    x = torch.ones(3)
    torch.manual_seed(0)
    out = jf(x)
    after = _ops(_trace_after(jf, "after dead code elimination"))
    assert "torch.exp" not in after and "Tensor.__mul__" not in after
    assert "Tensor.mul_" in after and "torch.rand" in after
    assert torch.equal(x, torch.full((3,), 2.0)) and torch.equal(out, torch.full((3,), 3.0))
    # the random draw stays in order with eager
    torch.manual_seed(0)
    jf(torch.ones(3))
    a = torch.rand(1)
    torch.manual_seed(0)
    fn(torch.ones(3))
    assert torch.equal(a, torch.rand(1))


def test_cse_merges_repeated_pure_ops():
    def fn(x):
        a = torch.tanh(x) * 2
        b = torch.tanh(x) * 2
        return a + b

    jf = compiler.jit(fn)
    x = torch.randn(4)
    torch.testing.assert_close(jf(x), fn(x))
    cse = _trace_after(jf, "after common subexpression elimination")
    assert _ops(cse).count("torch.tanh") == 1 and _ops(cse).count("Tensor.__mul__") == 1
    assert "merged 2" in cse.header


def test_cse_keeps_two_returned_tensors_distinct():
    jf = compiler.jit(lambda x: (x * 2, x * 2))
    a, b = jf(torch.ones(2))
    assert a is not b
    a.add_(1)  # the caller may mutate one: the other must not change, as in eager
    assert torch.equal(b, torch.full((2,), 2.0))


def test_cse_keeps_returned_views_of_distinct_results_distinct():
    jf = compiler.jit(lambda x: ((x + 1).view(-1), (x + 1).view(-1)))
    a, b = jf(torch.ones(2, 2))
    a.zero_()
    assert torch.equal(b, torch.full((4,), 2.0))


def test_cse_never_merges_random_or_fresh_tensors():
    def fn(x):
        return F.dropout(x, 0.5, training=True), F.dropout(x, 0.5, training=True), torch.zeros(3), torch.zeros(3)

    jf = compiler.jit(fn)
    x = torch.ones(1000)
    torch.manual_seed(1)
    got = jf(x)
    torch.manual_seed(1)
    expected = fn(x)
    for g, e in zip(got, expected):
        assert torch.equal(g, e)
    assert not torch.equal(got[0], got[1])
    assert got[2] is not got[3]


def test_cse_is_skipped_when_the_trace_mutates():
    def fn(x):
        a = x * 2
        x.add_(1)
        b = x * 2  # same expression, different value after the in-place add
        return a, b

    jf = compiler.jit(fn)
    x1, x2 = torch.ones(2), torch.ones(2)
    a, b = jf(x1)
    ea, eb = fn(x2)
    assert torch.equal(a, ea) and torch.equal(b, eb) and torch.equal(x1, x2)
    assert "skipped" in _trace_after(jf, "after common subexpression elimination").header


def test_custom_pass_list_appends_to_last_traces():
    calls = []

    def noop(trace):
        calls.append(trace)
        return trace.copy_with(trace.bsyms, "after a custom pass")

    jf = compiler.jit(lambda x: x + 1, passes=[noop])
    jf(torch.ones(1))
    headers = [t.header for t in compiler.last_traces(jf)]
    assert headers[1] == "after a custom pass" and len(calls) == 1
    assert headers[-1].startswith("execution trace")
