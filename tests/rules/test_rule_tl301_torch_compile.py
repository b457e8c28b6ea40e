"""TL301's claims, each run under real torch.compile(dynamic=True) on CPU (issue 24).

The static check reports the forms below as "torch.compile guards on this condition: inputs that take the other
path recompile"; each is compiled here with a counting backend and called with inputs that take both paths. A
form torch.compile handles symbolically (`min(top_k, x.size(-1))`: no recompile) is one the rule must not
report, and the same test checks that it does not.
"""

from __future__ import annotations

import pytest
import torch

from analyzer.static import lint_source
from counting_backend import CountingBackend


# (source defining f, the arguments of the calls, whether torch.compile(dynamic=True) recompiles)
FORMS = {
    "if on a size": ("def f(x):\n    if x.shape[0] > 4:\n        return x + 1\n    return x - 1\n",
                     [(torch.ones(2, 3),), (torch.ones(3, 3),), (torch.ones(8, 3),)], True),
    "while on a size": ("def f(x):\n    n = x.shape[0]\n    while n > 4:\n        x = x[:-1]\n        n = x.shape[0]\n"
                        "    return x * 2\n", [(torch.ones(2),), (torch.ones(3),), (torch.ones(6),)], True),
    "conditional expression on a size": ("def f(x):\n    return x + 1 if x.size(0) > 4 else x - 1\n",
                                         [(torch.ones(2),), (torch.ones(3),), (torch.ones(9),)], True),
    "loop bound from a number": ("def f(x, n: int):\n    for i in range(n):\n        x = x + i\n    return x\n",
                                 [(torch.ones(2), 2), (torch.ones(2), 3), (torch.ones(2), 5)], True),
    "branch on a shape copied into a tuple": ("def f(x):\n    if tuple(x.shape) == (2, 2):\n        return x + 1\n"
                                              "    return x - 1\n",
                                              [(torch.ones(2, 2),), (torch.ones(3, 2),), (torch.ones(4, 2),)], True),
    "min of a number and a size": ("def f(logits, top_k: int):\n    k = min(top_k, logits.size(-1))\n"
                                   "    return torch.topk(logits, k)[0]\n",
                                   [(torch.randn(2, 3), 10), (torch.randn(2, 8), 10), (torch.randn(2, 20), 10),
                                    (torch.randn(2, 50), 10)], False),
    # sizes 0 and 1 are specialized, so a dynamic compile decides these for every other size without a guard (round 4,
    # sglang; bench/precision_round4.md [17]); the inputs that take the other path get their own graph anyway
    # (test_a_test_of_size_zero_adds_no_graph below)
    "a size compared with 0": ("def f(x):\n    n = x.numel()\n    if n == 0:\n        return x.sum() * 0\n"
                               "    return x * 2\n", [(torch.ones(3, 5),), (torch.ones(5, 7),), (torch.ones(9, 9),)],
                               False),
    "a size minus one compared with 0, and a size > 0": (
        "def f(c, h=None):\n    b, width = c.shape\n    k = width - 1\n    if k == 0:\n        return c[:, 0]\n"
        "    if h is not None and h.shape[0] > 0:\n        return c[:, 1] + h.sum()\n    return c[:, 1]\n",
        [(torch.ones(2, 3), torch.ones(4)), (torch.ones(3, 5), torch.ones(6)), (torch.ones(4, 9), torch.ones(2))], False),
    # an int argument is not specialized that way: `n > 0` guards
    "an int argument compared with 0": ("def f(x, n: int):\n    if n > 0:\n        return x * n\n    return x\n",
                                        [(torch.ones(2), 0), (torch.ones(2), 2), (torch.ones(2), 3)], True),
}


def test_a_test_of_size_zero_adds_no_graph():
    """With an empty input among the calls, the function with `if x.numel() == 0` (or `x.shape[1] - 1 == 0` with a
    width of 1) compiles exactly as many graphs as the same function without the test."""
    def zero(x):
        if x.numel() == 0:
            return x.sum() * 0
        return x * 2

    def width_one(x):
        if x.shape[1] - 1 == 0:
            return x * 3
        return x * 2

    def plain(x):
        return x * 2

    def graphs(fn, shapes):
        torch._dynamo.reset()
        backend = CountingBackend()
        jf = torch.compile(fn, backend=backend, dynamic=True)
        for shape in shapes:
            x = torch.randn(*shape)
            assert torch.equal(jf(x), fn(x))
        return len(backend.graphs)

    shapes = [(3, 5), (5, 7), (9, 9)]
    assert graphs(zero, shapes + [(0, 5)]) == graphs(plain, shapes + [(0, 5)]) == 2
    assert graphs(width_one, shapes + [(4, 1)]) == graphs(plain, shapes + [(4, 1)]) == 2


@pytest.mark.parametrize("form", sorted(FORMS))
def test_torch_compile_recompiles_exactly_where_tl301_reports(form):
    source, calls, recompiles = FORMS[form]
    ns = {"torch": torch}
    exec(compile(source, "<tl301>", "exec"), ns)
    backend = CountingBackend()
    jf = torch.compile(ns["f"], backend=backend, dynamic=True)
    for args in calls:
        assert torch.equal(jf(*args), ns["f"](*args))
    assert (len(backend.graphs) > 1) is recompiles, (form, len(backend.graphs))
    jitted = "import torch\n@torch.compile(dynamic=True)\n" + source
    reported = [d for d in lint_source(jitted, "m.py") if d.code == "TL301"]
    assert bool(reported) is recompiles, (form, [d.message for d in reported])


def test_a_reached_function_branching_on_a_module_attribute_argument_compiles_once():
    # What the project index assumes when it lints a function reached from a dynamic compile with its scalar
    # arguments not symbolic (tests/cli/test_cli_project_index.py): `gradient(x, self.order)` from a compiled
    # forward branches on a constant; new sizes reuse the one graph.
    def gradient(x, order: int):
        if order == 1:
            return x.diff(dim=-1)
        return x.diff(dim=-1).diff(dim=-1)

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.order = 1

        def forward(self, x):
            return gradient(x, self.order) * 2

    backend = CountingBackend()
    m = M()
    jm = torch.compile(m, backend=backend, dynamic=True)
    for n in (5, 7, 12):
        x = torch.randn(3, n)
        assert torch.equal(jm(x), m(x))
    assert len(backend.graphs) == 1


# --- plain torch.compile (dynamic=None): automatic dynamic shapes (issue 31, miss 3) ----------------------------
# A size or int argument that changes is made symbolic at the first recompile. A branch on it then costs one more
# compile per path (as with dynamic=True: not reported, every shape check would be); a `range()` over it
# specializes on each value: one compile per new value up to the recompile limit, then eager.
_SIZES = (2, 3, 5, 6, 7, 9, 10, 11, 12, 13, 14)
AUTO_FORMS = {
    "loop over a size": ("def f(x):\n    for i in range(x.shape[0]):\n        x = x + i\n    return x\n",
                         [(torch.ones(s),) for s in _SIZES], True),
    "loop over an int argument": ("def f(x, n: int):\n    for i in range(n):\n        x = x + i\n    return x\n",
                                  [(torch.ones(2), s) for s in _SIZES], True),
    "branch on a size": ("def f(x):\n    if x.shape[0] > 4:\n        return x + 1\n    return x - 1\n",
                         [(torch.ones(s),) for s in _SIZES], False),
    "branch on an int argument": ("def f(x, n: int):\n    if n > 4:\n        return x + 1\n    return x - 1\n",
                                  [(torch.ones(2), s) for s in _SIZES], False),
}


@pytest.mark.parametrize("form", sorted(AUTO_FORMS))
def test_plain_torch_compile_recompiles_per_value_exactly_where_tl301_reports(form):
    source, calls, per_value = AUTO_FORMS[form]
    ns = {"torch": torch}
    exec(compile(source, "<tl301>", "exec"), ns)
    torch._dynamo.reset()
    backend = CountingBackend()
    jf = torch.compile(ns["f"], backend=backend)
    for args in calls:
        assert torch.equal(jf(*args), ns["f"](*args))  # right results, past the recompile limit too (eager)
    limit = torch._dynamo.config.recompile_limit
    if per_value:
        assert len(backend.graphs) == limit < len(calls)  # one graph per value until the limit, then eager
    else:
        assert len(backend.graphs) <= 3  # static, then dynamic, then the other path
    reported = [d for d in lint_source("import torch\n@torch.compile\n" + source, "m.py") if d.code == "TL301"]
    assert bool(reported) is per_value, (form, [d.message for d in reported])
    assert all(d.severity == "warning" and "recompile limit" in d.message for d in reported)


def test_a_loop_over_a_dimension_marked_dynamic_raises():
    def f(x):
        for i in range(x.shape[0]):
            x = x + i
        return x

    torch._dynamo.reset()
    x = torch.ones(5)
    torch._dynamo.mark_dynamic(x, 0)
    with pytest.raises(Exception, match="ConstraintViolation|specialized"):
        torch.compile(f, backend=CountingBackend())(x)


def test_dynamic_false_turns_automatic_dynamic_off():
    # with dynamic=False every new size recompiles whatever the code does: the loop adds nothing to report
    source = "import torch\n@torch.compile(dynamic=False)\ndef f(x):\n    for i in range(x.shape[0]):\n        x = x + i\n" \
             "    return x\n"
    assert not [d for d in lint_source(source, "m.py") if d.code == "TL301"]


def test_max_of_a_marked_dynamic_size_compiles_once_and_is_not_reported():
    # pytorch #149635's shape (tests/real_bugs/mark_dynamic_max_pad.py): `max(x.shape[0], 16)` on a dimension marked
    # dynamic. The report saw a recompile between sizes below and above 16; torch 2.13 keeps the max symbolic (one
    # graph for sizes on both sides), so TL301 does not report it, as with `min` under dynamic=True above.
    source = ("def f(x):\n    padded_size = max(x.shape[0], 16)\n    padded = torch.ones(padded_size, *x.shape[1:])\n"
              "    return padded + x.sum()\n")
    ns = {"torch": torch}
    exec(compile(source, "<tl301>", "exec"), ns)
    torch._dynamo.reset()
    backend = CountingBackend()
    jf = torch.compile(ns["f"], backend=backend)
    for n in (15, 17, 20, 5):
        x = torch.arange(n)
        torch._dynamo.mark_dynamic(x, 0)
        assert torch.equal(jf(x), ns["f"](x))
    assert len(backend.graphs) == 1
    assert not [d for d in lint_source("import torch\n@torch.compile(backend='eager')\n" + source, "m.py")
                if d.code == "TL301"]


def test_a_branch_on_a_size_marked_dynamic_guards_from_the_first_compile():
    # pytorch #122307: plain torch.compile, the argument marked with mark_dynamic before each call. The marked size
    # is symbolic at the first compile (sizes 2 and 3 share one graph, no recompile as automatic dynamic would need);
    # the branch on it is a guard, and an input taking the other path compiles again. TL301 reports the branch.
    source = "def f(x):\n    if x.shape[0] > 4:\n        return x + 1\n    return x - 1\n"
    ns = {"torch": torch}
    exec(compile(source, "<tl301>", "exec"), ns)
    backend = CountingBackend()
    jf = torch.compile(ns["f"], backend=backend)
    counts = []
    for n in (2, 3, 8):
        x = torch.ones(n)
        torch._dynamo.mark_dynamic(x, 0)
        assert torch.equal(jf(x), ns["f"](x))
        counts.append(len(backend.graphs))
    assert counts == [1, 1, 2], counts
    marked = ("import torch\ndef f(x):\n    if x.shape[0] > 4:\n        return x + 1\n    return x - 1\n"
              "cf = torch.compile(f)\nx = torch.ones(3)\ntorch._dynamo.mark_dynamic(x, 0)\ncf(x)\n")
    assert [d.line for d in lint_source(marked, "m.py") if d.code == "TL301"] == [3]
    unmarked = marked.replace("torch._dynamo.mark_dynamic(x, 0)\n", "")
    assert not [d for d in lint_source(unmarked, "m.py") if d.code == "TL301"]
