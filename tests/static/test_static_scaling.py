"""The static engine's work grows linearly with the size of one function.

Every rule asks the per-function flow facts (where a name is bound and read, which blocks exclude each
other, which return/raise cuts a path) once per write or read; a query that scans the whole function makes
the lint of one long function quadratic. Each pattern below is generated at N and 8N statements, in a
plain and in a jitted function (where the jit rules run as well), and the work per statement may grow by
at most _MAX_GROWTH: linear or n log n passes, not quadratic (8x).

Work is counted, not timed: the Python lines the linter executes (sys.settrace 'line' events), which
include every iteration of a Python-level loop or comprehension, so a scan over all bindings per query
shows up exactly. Timings were flaky on shared CI machines (a run gave x3.04 for a pattern whose line
count grows x1.23); wall-clock throughput is bench/lint_throughput.py's job. A scan done inside one C
call (`x in some_list`) is not counted; the flow index keeps such queries on dicts and bisect.
"""

from __future__ import annotations

import sys

import pytest

from analyzer.static import lint_source

_MAX_GROWTH = 2.0


def _reshape_writes(n: int) -> list[str]:
    """`x = x.reshape(-1)` then `x.add_(1)`: every write may go through a view of the argument."""
    return ["x = x.reshape(-1)", "x.add_(1)"] * (n // 2)


def _shared_names(n: int) -> list[str]:
    """A few names read and written over and over: long per-name lists of bindings and reads."""
    out = []
    for _ in range(n // 6):
        out += ["v = x.reshape(-1)", "v.add_(a)", "y = x + v", "a = y.sum() + a", "x = x.view(-1)", "x.mul_(a)"]
    return out


def _elif_chain(n: int) -> list[str]:
    """One if/elif/.../else with n/3 arms, each writing through a maybe-view: n/3 exclusive groups."""
    out = ["if k == 0:", "    x = x.reshape(-1)", "    x.add_(1)"]
    for i in range(1, n // 3):
        out += [f"elif k == {i}:", "    x = x.reshape(-1)", f"    x.add_({i})"]
    return out + ["else:", "    x.mul_(2)", "y = x + 1"]


def _loops(n: int) -> list[str]:
    """Many loops in a row, each rebinding and writing (a write in a loop also counts reads in the loop)."""
    out = []
    for _ in range(n // 4):
        out += ["for i in range(k):", "    x = x.reshape(-1)", "    x.add_(i)", "    y = x + i"]
    return out


def _exits(n: int) -> list[str]:
    """Many if/return and try/except/finally blocks: many exits and guarded blocks to check a path against."""
    out = []
    for i in range(n // 12):
        out += [f"if k == {i}:", "    x = x.reshape(-1)", "    x.add_(1)", "    return x"]
        out += ["try:", "    x = x.reshape(-1)", "    x.add_(2)", "except ValueError:", "    raise",
                "finally:", "    y = x + 1", "y = x * 2"]
    return out


def _deep_branches(n: int) -> list[str]:
    """Blocks of if/else nested 8 deep, each level writing through a maybe-view and reading in the else."""
    out = []
    for _ in range(n // 32):
        indent = ""
        for level in range(8):
            out += [indent + f"if k > {level}:", indent + "    x = x.reshape(-1)", indent + "    x.add_(1)"]
            indent += "    "
        out += [indent + "y = x + 1"]
        for level in reversed(range(8)):
            indent = indent[:-4]
            out += [indent + "else:", indent + "    y = x * 2", indent + "    x.sub_(y)"]
    return out


PATTERNS = {
    "reshape_writes": _reshape_writes,
    "shared_names": _shared_names,
    "elif_chain": _elif_chain,
    "loops": _loops,
    "exits": _exits,
    "deep_branches": _deep_branches,
}
_SMALL = 100
_FACTOR = 8


def _source(pattern: str, n: int, decorator: str) -> tuple[str, int]:
    body = PATTERNS[pattern](n)
    # `scale` is a mutable global: a jitted function that reads it gets a TL201, so the jit rules ran
    lines = ["import torch", "import thunder", "", 'scale = {"k": 2}', "", decorator]
    lines += ["def f(x: torch.Tensor, a, k: int):", '    s = scale["k"]']
    lines += ["    " + line for line in body]
    lines += ["    return x", ""]
    return "\n".join(lines), len(body)


def lines_executed(text: str) -> int:
    """Python lines run by one lint of ``text``, after a warm-up lint (imports and caches filled)."""
    lint_source(text, "scaling.py", with_fixes=False)
    count = 0

    def on_line(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
        return on_line

    previous = sys.gettrace()
    sys.settrace(lambda frame, event, arg: on_line)
    try:
        lint_source(text, "scaling.py", with_fixes=False)
    finally:
        sys.settrace(previous)
    return count


# Every pattern plain and under one jit decorator (the jit rules add their own per-function passes).
_CASES = [(p, d) for i, p in enumerate(sorted(PATTERNS)) for d in ("", ("@torch.compile", "@thunder.jit")[i % 2])]


@pytest.mark.parametrize("pattern, decorator", _CASES, ids=[f"{p}-{d or 'plain'}" for p, d in _CASES])
def test_lint_work_grows_linearly(pattern, decorator):
    small, n_small = _source(pattern, _SMALL, decorator)
    large, n_large = _source(pattern, _FACTOR * _SMALL, decorator)
    diagnostics = lint_source(large, "scaling.py", with_fixes=False)
    # the generated code is real: it parses, and the rules find the writes through views
    assert any(d.code == "TL101" for d in diagnostics), [d.code for d in diagnostics]
    if decorator:
        assert any(d.code == "TL201" for d in diagnostics), [d.code for d in diagnostics]
    w_small, w_large = lines_executed(small), lines_executed(large)
    growth = (w_large / n_large) / (w_small / n_small)
    assert growth < _MAX_GROWTH, (
        f"{pattern} {decorator or 'plain'}: {n_small} statements {w_small} lines run, {n_large} statements "
        f"{w_large} lines run: work per statement x{growth:.2f}"
    )
