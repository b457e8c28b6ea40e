"""Flow through try/except/else/finally and match: exclusive arms observe nothing of each other, and a
return inside a guarded block does not end the paths that an exception or a finally still takes."""

import ast
import sys

import pytest

from analyzer.static import lint_source
from analyzer.static.flow import build_facts


def tl101(src):
    return [d.line for d in lint_source(src, select=["TL101"], with_fixes=False)]


HEAD = "import torch\ndef f(x, mode, log):\n    t = torch.zeros(4, 4)\n    y = t.reshape(-1)\n"

QUIET = {
    # the write and the read of `t` sit in two different cases: no run executes both
    "match cases exclude each other": HEAD
    + "    match mode:\n        case 'a':\n            y[0] = 1\n            z = y\n        case _:\n            z = t * 2\n"
    "    return z\n",
    # an except handler runs only when the body raised, the else block only when it did not
    "except handler and else block exclude each other": HEAD
    + "    try:\n        w = x + 1\n    except ValueError:\n        y[0] = 1\n        z = y\n    else:\n"
    "        z = t * 2\n    return z\n",
    "two except handlers exclude each other": HEAD
    + "    try:\n        w = x + 1\n    except ValueError:\n        y[0] = 1\n        z = y\n"
    "    except TypeError:\n        z = t * 2\n    return z\n",
    # a return that no exception can skip still ends the path
    "return at the end of a plain block": HEAD + "    if mode:\n        y[0] = 1\n        return y\n    return t\n",
}

LOUD = {
    # an exception after the write lands in the handler, which reads `t`
    "write in try body, read in handler": (
        HEAD + "    try:\n        y[0] = 1\n        z = x.cuda()\n    except RuntimeError:\n        return t\n"
        "    return z\n",
        [6],
    ),
    # `return` inside the try can be skipped by an exception: the code after the try still runs
    "return in try body, read after the try": (
        HEAD + "    try:\n        y[0] = 1\n        return y.cuda()\n    except RuntimeError:\n        pass\n"
        "    return t\n",
        [6],
    ),
    # the finally runs after the return
    "return in try body, read in finally": (
        HEAD + "    try:\n        y[0] = 1\n        return y\n    finally:\n        log.append(t.sum())\n",
        [6],
    ),
    # the same case in two match arms: the write in one case is seen by code after the match
    "write in a case, read after the match": (
        HEAD + "    match mode:\n        case 'a':\n            y[0] = 1\n        case _:\n            pass\n"
        "    return t\n",
        [7],
    ),
}


@pytest.mark.parametrize("name", list(QUIET))
def test_quiet(name):
    assert tl101(QUIET[name]) == []


@pytest.mark.parametrize("name", list(LOUD))
def test_loud(name):
    src, lines = LOUD[name]
    assert tl101(src) == lines


def test_reachable_between_arms_and_out_of_guarded_blocks():
    src = (
        "def f(a):\n"
        "    try:\n        p = 1\n        return p\n    except E:\n        q = 2\n    else:\n        r = 3\n"
        "    s = 4\n"
        "    match a:\n        case 1:\n            u = 5\n        case 2:\n            v = 6\n"
    )
    facts = build_facts(ast.parse(src).body[0])
    pos = {b: facts.bindings[b][0].stmt for b in "pqrsuv"}
    at = {k: (n.lineno, n.col_offset) for k, n in pos.items()}
    assert not facts.reachable(at["q"], at["r"])  # handler vs else
    assert not facts.reachable(at["u"], at["v"])  # two cases
    assert facts.reachable(at["p"], at["q"])  # body -> handler
    assert facts.reachable(at["p"], at["s"])  # the return in the try body can be skipped by an exception
    assert facts.reachable(at["q"], at["s"]) and facts.reachable(at["s"], at["u"])


def test_rule_out_of_depth_reports_tl001_where_the_deep_expression_is():
    # parsable, but too deep for the recursive rules: TL001 points at the deep sum, others still report
    src = (
        "import torch\nscale = 2\n@torch.compile(dynamic=True)\ndef f(x, n: int):\n"
        "    t = x.reshape(-1)\n    t.add_(1)\n    y = " + " + ".join(["n"] * 1500) + "\n"
        "    if y > 0:\n        return x * scale\n    return x\n"
    )
    # at Python's default limit: torch's inductor raises the process's limit to 2000 for good, and an
    # earlier test in the session may have compiled with it
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        ds = lint_source(src, with_fixes=False)
    finally:
        sys.setrecursionlimit(limit)
    tl001 = [d for d in ds if d.code == "TL001"]
    assert len(tl001) == 1
    assert (tl001[0].line, tl001[0].column) == (7, 9)  # the first `n` of the sum (1-based column)
    assert {"TL101", "TL201"} <= {d.code for d in ds}


def test_parse_pauses_the_gc_and_restores_its_state_even_on_errors():
    import gc

    for text in ("import torch\nx = 1\n", "def f(:\n"):
        assert gc.isenabled()
        lint_source(text)
        assert gc.isenabled()
        gc.disable()
        try:
            lint_source(text)
            assert not gc.isenabled()  # a caller that paused the GC keeps it paused
        finally:
            gc.enable()
