"""TL101's fixes keep the author's intent (issue 31): applied with analyzer.fix_source, then run under torch.

When the written result is never read again the write was meant for the base: the view is the fix, and the copy
(which would make the function do nothing) is shown, never applied. When only the result is used, the copy is
meant. In a jitted function the view fix says that TL102 then reports the write.
"""

import pytest

torch = pytest.importorskip("torch")

from analyzer.diagnostics import Applicability  # noqa: E402
from analyzer.static import fix_source, lint_source  # noqa: E402


def run(code, name, *args):
    ns = {}
    exec(compile(code, "<fixed>", "exec"), ns)
    return ns[name](*args)


def tl101(src):
    [d] = [d for d in lint_source(src) if d.code == "TL101"]
    return d


# A function whose only purpose is to fill the caller's buffer through a flattened view (the report:
# the fix-all appended `.clone()` there, and the buffer stayed empty: sum 27.2 before, 0.0 after).
FILL = (
    "import torch\n"
    "def fill_rope_(freqs, positions, inv_freq):\n"
    "    angles = torch.outer(positions, inv_freq)\n"
    "    freqs.flatten(0, -2).copy_(torch.cat([angles.cos(), angles.sin()], -1))\n"
)


def test_filling_the_callers_buffer_gets_the_view_never_the_copy():
    d = tl101(FILL)
    titles = {f.title.split(" (")[0]: f for f in d.fixes}
    assert titles["Make the aliasing explicit"].applicability is Applicability.UNSAFE
    assert titles["Make the copy explicit"].applicability is Applicability.DISPLAY
    out = fix_source(FILL, unsafe=True)
    assert ".clone()" not in out.text and "freqs.view(-1, *freqs.shape[-1:])" in out.text
    assert [x.code for x in out.remaining] == []

    positions, inv_freq = torch.arange(8.0), torch.linspace(0.1, 1.0, 4)
    before, after = torch.zeros(2, 4, 8), torch.zeros(2, 4, 8)
    run(FILL, "fill_rope_", before, positions, inv_freq)
    run(out.text, "fill_rope_", after, positions, inv_freq)
    assert before.abs().sum() > 0 and torch.equal(before, after)  # the buffer is filled as before the fix


@pytest.mark.parametrize(
    "call",
    ["x.contiguous()", "x.flatten(start, -1)"],  # no view spelling: only the copy is offered, and only shown
)
def test_without_a_view_spelling_fix_all_leaves_the_write_alone(call):
    src = f"import torch\ndef fill_(x, start):\n    {call}.fill_(1.0)\n"
    d = tl101(src)
    assert [f.applicability for f in d.fixes] == [Applicability.DISPLAY]
    assert fix_source(src, unsafe=True).text == src


# Only the written result is used: the copy was meant, and it stops the caller's tensor from changing.
NORMALIZE = (
    "import torch\n"
    "def centered(x):\n"
    "    y = x.reshape(-1)\n"
    "    y.sub_(y.mean())\n"
    "    return y\n"
)


def test_copy_first_when_only_the_result_is_used():
    d = tl101(NORMALIZE)
    assert d.fixes[0].title == "Make the copy explicit (append `.clone()`)"
    assert d.fixes[0].applicability is Applicability.UNSAFE
    out = fix_source(NORMALIZE, unsafe=True)
    assert "x.reshape(-1).clone()" in out.text and out.remaining == []

    x = torch.arange(6.0).reshape(2, 3)
    x_before, x_after = x.clone(), x.clone()
    got_before = run(NORMALIZE, "centered", x_before)
    got_after = run(out.text, "centered", x_after)
    assert torch.equal(got_before, got_after)  # the function's result is kept
    assert torch.equal(x_after, x) and not torch.equal(x_before, x)  # and the caller's tensor is no longer hit


def test_both_read_again_view_first_and_the_copy_still_applicable():
    src = "import torch\ndef f(x):\n    y = x.reshape(-1)\n    y.add_(1)\n    return x, y\n"
    d = tl101(src)
    assert [f.title.split(" (")[0] for f in d.fixes] == ["Make the aliasing explicit", "Make the copy explicit"]
    assert all(f.applicability is Applicability.UNSAFE for f in d.fixes)


JITTED = (
    "import torch\n"
    "@torch.compile\n"
    "def scale_(x):\n"
    "    y = x.reshape(-1)\n"
    "    y.mul_(2)\n"
    "    return x\n"
)


def test_view_fix_in_a_jitted_function_says_that_tl102_reports_it_then():
    d = tl101(JITTED)
    view = d.fixes[0]
    assert view.title == "Make the aliasing explicit (use `view`; TL102 then reports the write to the input `x`)"
    out = fix_source(JITTED, unsafe=True)
    assert "y = x.view(-1)" in out.text
    assert [(r.code, r.line) for r in out.remaining] == [("TL102", d.line)]  # as the title said
    x = torch.arange(4.0)
    assert torch.equal(run(JITTED.replace("@torch.compile\n", ""), "scale_", x.clone()),
                       run(out.text.replace("@torch.compile\n", ""), "scale_", x.clone()))
    # the same function, not compiled: no TL102 follows, and the title says nothing of it
    plain = JITTED.replace("@torch.compile\n", "")
    assert tl101(plain).fixes[0].title == "Make the aliasing explicit (use `view`)"
    assert fix_source(plain, unsafe=True).remaining == []


@pytest.mark.parametrize("dims", [(0, -2), (1, -2), (-2, -1), (-3, -2), (0, -3), (1, -1), (-3, -1), (1, 2)])
def test_flatten_view_spelling_matches_flatten(dims):
    start, stop = dims
    src = f"import torch\ndef f(x):\n    y = x.flatten({start}, {stop})\n    y[0] = 7\n    return x, y.shape\n"
    out = fix_source(src, unsafe=True)
    assert "view(" in out.text and "flatten" not in out.text
    x = torch.arange(2 * 3 * 4 * 5.0).reshape(2, 3, 4, 5)
    before, shape_before = run(src, "f", x.clone())
    after, shape_after = run(out.text, "f", x.clone())
    assert shape_before == shape_after and torch.equal(before, after)
