"""Data-dependent reads split the trace (compiler/frontend/segments.py): results, effects and gradients equal eager,
continuations are cached per outcome, and TL302 is reported at each read."""
import warnings

import pytest
import torch

import analyzer
import compiler
from compiler.frontend import segments


def branchy(x):
    y = x * 2
    if y.sum() > 0:
        return y + 1
    return y - 1


def test_both_branches_match_eager_and_each_continuation_is_traced_once():
    jfn = compiler.jit(branchy)
    xs = [torch.ones(3), -torch.ones(3), torch.full((3,), 2.0), -torch.full((3,), 3.0)]
    for x in xs:
        assert torch.equal(jfn(x), branchy(x))
        assert compiler._last_entry(jfn).segment_count == 2
    assert compiler.cache_misses(jfn) == 2 and compiler.cache_hits(jfn) == 2
    first, second = compiler.last_traces(jfn)
    assert "segment 1" in first.header and "Tensor.sum" in str(first)
    assert "final" in second.header and "__sub__" in str(second) and "__add__" not in str(second)


def test_gradients_flow_across_segments_as_in_eager():
    def fn(w, x):
        h = torch.tanh(x @ w)
        scale = h.abs().max().item()
        if h.mean() > 0:
            return (h * scale).sum()
        return (h / scale).sum()

    jfn = compiler.jit(fn)
    for seed in range(4):
        g = torch.Generator().manual_seed(seed)
        w0, x = torch.randn(4, 3, generator=g), torch.randn(5, 4, generator=g)
        w1, w2 = w0.clone().requires_grad_(), w0.clone().requires_grad_()
        jfn(w1, x).backward()
        fn(w2, x).backward()
        torch.testing.assert_close(w1.grad, w2.grad, rtol=0, atol=0)


def test_in_place_effects_before_a_read_happen_once_also_when_a_new_outcome_retraces():
    def fn(x):
        x.add_(1)
        if x.sum() > 0:
            return x * 2
        return x * 3

    jfn = compiler.jit(fn)
    for start in (1.0, -5.0, 2.0, -7.0):
        a, b = torch.full((2,), start), torch.full((2,), start)
        got, want = jfn(a), fn(b)
        assert torch.equal(got, want) and torch.equal(a, b)
    assert compiler.cache_misses(jfn) == 2


def test_a_loop_on_tensor_values_runs_as_many_times_as_in_eager():
    def halve_until_small(x):
        n = 0
        while x.abs().max() > 1:
            x = x / 2
            n += 1
        return x, n

    jfn = compiler.jit(halve_until_small)
    for v in (0.5, 3.0, 9.0, 3.5, 100.0):
        x = torch.tensor([v, -v / 3])
        (gx, gn), (ex, en) = jfn(x), halve_until_small(x)
        assert torch.equal(gx, ex) and gn == en
    assert compiler._last_entry(jfn).segment_count == en + 2


def test_values_read_become_numbers_of_the_next_segment():
    def fn(x):
        n = int(x.sum().item())
        rows = x[x > 0]
        return x * n, rows.shape[0], len(torch.nonzero(x)), x.tolist(), rows.sum() * 2

    jfn = compiler.jit(fn)
    for x in (torch.tensor([1.0, -2.0, 3.0]), torch.tensor([4.0, 2.0, 3.0]), torch.tensor([1.0, -2.0, 3.0])):
        got, want = jfn(x), fn(x)
        assert torch.equal(got[0], want[0]) and got[1:4] == want[1:4] and torch.equal(got[4], want[4])
    assert compiler.cache_hits(jfn) == 1


def test_grad_mode_blocks_around_a_read():
    def fn(x):
        with torch.no_grad():
            y = x * 2
            flag = bool(y.sum() > 0)
            z = y + 1
        return (x * z).sum() if flag else (x - z).sum()

    jfn = compiler.jit(fn)
    for v in (1.0, -1.0, 2.0):
        a = torch.full((3,), v, requires_grad=True)
        b = a.detach().clone().requires_grad_()
        jfn(a).backward()
        fn(b).backward()
        assert torch.equal(a.grad, b.grad)
        assert torch.is_grad_enabled()


def test_outcomes_beyond_the_bound_are_traced_for_their_call_only():
    def fn(x):
        return x * x.sum().item()

    jfn = compiler.jit(fn)
    for v in range(segments.MAX_OUTCOMES + 4):
        x = torch.full((2,), float(v))
        assert torch.equal(jfn(x), fn(x))
    root = jfn.entries[0].computation.root
    assert len(root.children) == segments.MAX_OUTCOMES and root.extra == 4
    x = torch.full((2,), 3.0)
    hits = compiler.cache_hits(jfn)
    assert torch.equal(jfn(x), fn(x)) and compiler.cache_hits(jfn) == hits + 1


def test_a_module_forward_with_a_read():
    class Gate(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            h = self.lin(x)
            return torch.relu(h) if h.mean() > 0 else h.sigmoid()

    torch.manual_seed(0)
    m = Gate()
    jm = compiler.jit(m)
    for seed in range(4):
        x = torch.randn(2, 4, generator=torch.Generator().manual_seed(seed)) * 3
        assert torch.equal(jm(x), m(x))


def test_python_effects_with_a_read_happen_once_per_call():
    log = []

    def fn(x):
        log.append(1)
        return x + 1 if x.sum() > 0 else x - 1

    jfn = compiler.jit(fn)
    for v in (1.0, -1.0, 1.0):
        assert torch.equal(jfn(torch.full((2,), v)), fn(torch.full((2,), v)))
    assert len(log) == 6


def test_check_reports_tl302_at_each_read_with_the_value_and_returns_nothing_else():
    def fn(x):
        total = x.sum()
        if total > 0:
            x = x * 2
        return x, total.item()

    found = analyzer.check(fn, torch.ones(2))
    assert [d.code for d in found] == ["TL302", "TL302"]
    first = fn.__code__.co_firstlineno
    assert [d.line for d in found] == [first + 2, first + 4]
    assert "read True" in found[0].message and "read 2.0" in found[1].message


def test_warn_and_error_levels_for_tl302():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jfn = analyzer.jit(branchy, sharp_edges="warn")
        assert torch.equal(jfn(torch.ones(2)), branchy(torch.ones(2)))
    assert [str(w.message)[:5] for w in caught] == ["TL302"]

    def bump(x):
        x.add_(1)
        try:
            if x.sum() > 0:
                return x
        except Exception:  # an error-level finding cannot be caught by the user's code
            return None
        return -x

    x = torch.zeros(2)
    with pytest.raises(analyzer.SharpEdgeError, match="TL302"):
        analyzer.jit(bump, sharp_edges="error")(x)
    assert torch.equal(x, torch.zeros(2)), "nothing ran for real before the error"
