"""The static engine's cost grows linearly with the size of one function.

Every rule asks the per-function flow facts (where a name is bound and read, which blocks exclude each
other, which return/raise cuts a path) once per write or read; a query that scans the whole function makes
the lint of one long function quadratic. Each pattern below is generated at N and 4N statements, in a
plain and in a jitted function (where the jit rules run as well), and the per-statement cost may grow by
at most _MAX_GROWTH: linear or n log n passes with room for a loaded machine, quadratic (4x) does not.
The timings run in a fresh process, as the CLI lints: late in a whole test session the heap the earlier tests
left behind made the large case alone up to 40% slower and the ratio flaky.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analyzer.static import lint_source

_MAX_GROWTH = 2.5
_REPEATS = 3


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
_SMALL = 200
_FACTOR = 8


def _source(pattern: str, n: int, decorator: str) -> tuple[str, int]:
    body = PATTERNS[pattern](n)
    # `scale` is a mutable global: a jitted function that reads it gets a TL201, so the jit rules ran
    lines = ["import torch", "import thunder", "", 'scale = {"k": 2}', "", decorator]
    lines += ["def f(x: torch.Tensor, a, k: int):", '    s = scale["k"]']
    lines += ["    " + line for line in body]
    lines += ["    return x", ""]
    return "\n".join(lines), len(body)


def _lint_seconds(text: str) -> tuple[float, list]:
    """Best of a few runs after a warm-up (the least disturbed by other work on the machine), and the findings."""
    diagnostics = lint_source(text, "scaling.py", with_fixes=False)
    best = float("inf")
    # The cyclic GC is paused while timing: its passes start at moments that depend on everything else the
    # process allocated, which adds noise of the size of the effect measured here, not engine cost.
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for _ in range(_REPEATS):
            t0 = time.perf_counter()
            lint_source(text, "scaling.py", with_fixes=False)
            best = min(best, time.perf_counter() - t0)
    finally:
        if was_enabled:
            gc.enable()
    return best, diagnostics


def _timed_in_fresh_process(pattern: str, decorator: str) -> tuple[float, float]:
    root = Path(__file__).resolve().parents[2]
    code = (
        "import json, sys\n"
        f"sys.path[:0] = [{str(root)!r}, {str(Path(__file__).parent)!r}]\n"
        "import test_static_scaling as t\n"
        f"small, _ = t._source({pattern!r}, t._SMALL, {decorator!r})\n"
        f"large, _ = t._source({pattern!r}, t._FACTOR * t._SMALL, {decorator!r})\n"
        "print(json.dumps([t._lint_seconds(small)[0], t._lint_seconds(large)[0]]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(root)}
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert ran.returncode == 0, ran.stderr
    return tuple(json.loads(ran.stdout.splitlines()[-1]))


# Every pattern plain and under one jit decorator (the jit rules add their own per-function passes).
_CASES = [(p, d) for i, p in enumerate(sorted(PATTERNS)) for d in ("", ("@torch.compile", "@thunder.jit")[i % 2])]


@pytest.mark.parametrize("pattern, decorator", _CASES, ids=[f"{p}-{d or 'plain'}" for p, d in _CASES])
def test_lint_time_grows_linearly(pattern, decorator):
    small, n_small = _source(pattern, _SMALL, decorator)
    large, n_large = _source(pattern, _FACTOR * _SMALL, decorator)
    t_small, t_large = _timed_in_fresh_process(pattern, decorator)
    diagnostics = lint_source(large, "scaling.py", with_fixes=False)
    # the generated code is real: it parses, and the rules find the writes through views
    assert any(d.code == "TL101" for d in diagnostics), [d.code for d in diagnostics]
    if decorator:
        assert any(d.code == "TL201" for d in diagnostics), [d.code for d in diagnostics]
    growth = (t_large / n_large) / (t_small / n_small)
    assert growth < _MAX_GROWTH, (
        f"{pattern} {decorator or 'plain'}: {n_small} statements {t_small:.3f}s, {n_large} statements "
        f"{t_large:.3f}s: per-statement cost x{growth:.2f}"
    )
