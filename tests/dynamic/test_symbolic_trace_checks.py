"""TL301 from traces: analyzer.check traces with symbolic values and reports each decision on a symbolic
number that changes the computation, once per line, naming the constraint; check-and-raise decisions are
constraints of the prologue but not findings. analyzer.jit reports them under cache="symbolic values"."""
import warnings

import pytest
import torch

import analyzer
from analyzer.dynamic import SharpEdgeError, check
from source_markers import marker_line

HERE = __file__


def _line(marker: str) -> int:
    return marker_line(HERE, marker)


def decisions(a, n, m):
    assert n > 0
    if m < 0:
        raise ValueError("m must be >= 0")
    if n > 5:  # branch
        a = a + 1
    for i in range(m):  # loop
        a = a * 2
    return a * max(n, 3)  # select


def test_each_decision_is_reported_once_per_line_with_its_constraint():
    found = [d for d in check(decisions, torch.randn(3), 7, 2) if d.code == "TL301"]
    by_line = {d.line: d.message for d in found}
    assert set(by_line) == {_line("branch"), _line("loop"), _line("select")}
    assert "specializes the trace on `n > 5`: calls with `n <= 5` trace again" in by_line[_line("branch")]
    assert "`m == 2`" in by_line[_line("loop")] and "trip count" in by_line[_line("loop")]
    assert "`n >= 3`" in by_line[_line("select")]
    assert all(d.path == HERE for d in found)


def no_decision(a, n):
    return a * int(n > 3) + n


def test_no_decision_no_finding():
    assert [d for d in check(no_decision, torch.randn(3), 5) if d.code == "TL301"] == []


def test_analyzer_jit_reports_tl301_under_symbolic_values_only():
    jf = analyzer.jit(decisions, sharp_edges="error", cache="symbolic values")
    with pytest.raises(SharpEdgeError, match="TL301"):
        jf(torch.randn(3), 7, 2)
    plain = analyzer.jit(decisions, sharp_edges="error")  # constant values: nothing is symbolic
    torch.testing.assert_close(plain(torch.ones(3), 7, 2), decisions(torch.ones(3), 7, 2))
    warned = analyzer.jit(decisions, sharp_edges="warn", cache="symbolic values")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.testing.assert_close(warned(torch.ones(3), 7, 2), decisions(torch.ones(3), 7, 2))
    assert sum("TL301" in str(w.message) for w in caught) == 3
