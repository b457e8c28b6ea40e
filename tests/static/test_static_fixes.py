"""TL101 fixes: libcst-built edits, applied only when unsafe fixes are allowed, formatting kept, idempotent."""

import pytest

from analyzer.diagnostics import Diagnostic, Edit, Fix
from analyzer.fixes import apply_edits, apply_fixes
from analyzer.static import fix_source, lint_source


def fixed(src, **kw):
    return fix_source(src, unsafe=True, **kw).text


@pytest.mark.parametrize(
    "before, after",
    [
        ("y = x.reshape(-1)", "y = x.view(-1)"),
        ("y = x.reshape( 2 ,  -1 )", "y = x.view( 2 ,  -1 )"),
        ("y = torch.reshape(x, (2, -1))", "y = x.view((2, -1))"),
        ("y = x.flatten()", "y = x.view(-1)"),
        ("y = x.ravel()", "y = x.view(-1)"),
        ("y = x.flatten(1)", "y = x.view(*x.shape[:1], -1)"),
        ("y = x.flatten(0, 1)", "y = x.view(-1, *x.shape[2:])"),
        ("y = torch.flatten(x)", "y = x.view(-1)"),
        ("y = x.reshape_as(z)", "y = x.view_as(z)"),
    ],
)
def test_view_fix_when_the_input_is_read_after_the_write(before, after):
    src = f"import torch\ndef f(x, z):\n    {before}\n    y.add_(1)\n    return x\n"
    out = fixed(src)
    assert out == src.replace(before, after)
    assert fix_source(src, unsafe=True).remaining == []


def test_clone_fix_first_when_the_input_is_not_read_again():
    src = "import torch\ndef f(x):\n    y = x.reshape(-1)\n    y.add_(1)\n    return y\n"
    (d,) = lint_source(src)
    assert d.fixes[0].title.startswith("Make the copy explicit")
    assert fixed(src) == src.replace("x.reshape(-1)", "x.reshape(-1).clone()")


def test_contiguous_has_only_the_clone_fix():
    src = "import torch\ndef f(x):\n    y = x.contiguous()\n    y.add_(1)\n    return x\n"
    (d,) = lint_source(src)
    assert [f.title.split(" (")[0] for f in d.fixes] == ["Make the copy explicit"]


def test_unsafe_fixes_need_unsafe():
    src = "import torch\ndef f(x):\n    y = x.reshape(-1)\n    y.add_(1)\n    return x\n"
    out = fix_source(src)
    assert out.text == src and out.applied == [] and [d.code for d in out.remaining] == ["TL101"]


def test_comments_and_formatting_are_kept_and_fixing_twice_changes_nothing():
    src = (
        "import torch\n\n\ndef f(x,   z):  # keep me\n    # a comment\n    y = x.reshape(  # shape below\n"
        "        -1,\n    )\n    y[0] = 1  # write\n    return x\n"
    )
    once = fix_source(src, unsafe=True)
    assert [d.code for d in once.applied] == ["TL101"]
    assert once.text == src.replace("x.reshape(", "x.view(")
    twice = fix_source(once.text, unsafe=True)
    assert twice.text == once.text and twice.applied == []


def test_several_findings_in_one_file_are_all_fixed():
    src = (
        "import torch\ndef f(x):\n    a = x.reshape(-1)\n    a.add_(1)\n    return x\n"
        "def g(x):\n    x.flatten()[0] = 1\n"
    )
    out = fix_source(src, unsafe=True)
    assert len(out.applied) == 2 and out.remaining == []
    # g's write lands in an unnamed temporary: it can only have been meant for x, so the view comes first
    assert "a = x.view(-1)" in out.text and "x.view(-1)[0] = 1" in out.text


def test_fix_order_follows_the_evidence_of_intent():
    def first_fix(src):
        [d] = [d for d in lint_source(src) if d.code == "TL101"]
        return d.fixes[0].title

    # the written result is used afterwards and the argument is not read again: a copy was meant
    assert "copy" in first_fix("import torch\ndef f(x):\n    y = x.reshape(-1)\n    y.add_(1)\n    return y\n")
    # the written result is never read again: the write was meant for the caller's tensor
    assert "aliasing" in first_fix("import torch\ndef f(x):\n    y = x.reshape(-1)\n    y[0] = 1\n")
    # the argument is read again after the write
    assert "aliasing" in first_fix(
        "import torch\ndef f(x):\n    y = x.reshape(-1)\n    y.add_(1)\n    return x, y\n")


def test_noqa_finding_is_not_fixed():
    src = "import torch\ndef f(x):\n    y = x.reshape(-1)\n    y.add_(1)  # noqa: TL101\n    return x\n"
    assert fix_source(src, unsafe=True).text == src


def test_a_fix_that_would_not_parse_is_never_applied():
    src = "x = 1\ny = 2\n"
    bad = Diagnostic("TL101", "reshape-inplace", "error", "m", "<s>", 1, 1, 1, 2,
                     fixes=(Fix("break it", "safe", (Edit(1, 1, 1, 2, "def ("),)),))
    good = Diagnostic("TL101", "reshape-inplace", "error", "m", "<s>", 2, 5, 2, 6,
                      fixes=(Fix("ok", "safe", (Edit(2, 5, 2, 6, "3"),)),))
    from analyzer.diagnostics import Applicability, Severity

    bad = Diagnostic("TL101", "reshape-inplace", Severity.ERROR, "m", "<s>", 1, 1, 1, 2,
                     fixes=(Fix("break it", Applicability.SAFE, (Edit(1, 1, 1, 2, "def ("),)),))
    good = Diagnostic("TL101", "reshape-inplace", Severity.ERROR, "m", "<s>", 2, 5, 2, 6,
                      fixes=(Fix("ok", Applicability.SAFE, (Edit(2, 5, 2, 6, "3"),)),))
    text, applied = apply_fixes(src, [bad, good], unsafe=False)
    assert text == "x = 1\ny = 3\n" and applied == [good]


def test_apply_edits_with_non_ascii_and_crlf():
    src = "é = 1\r\nz = 'ü'; y = x\r\n"
    assert apply_edits(src, [Edit(2, 14, 2, 15, "w")]) == "é = 1\r\nz = 'ü'; y = w\r\n"


def test_fix_source_on_a_syntax_error_returns_the_text_unchanged():
    out = fix_source("def f(:\n", unsafe=True)
    assert out.text == "def f(:\n" and [d.code for d in out.remaining] == ["TL001"]


def test_reshape_with_shape_keyword_becomes_positional_view():
    src = "import torch\ndef f(x):\n    y = x.reshape(shape=(2, -1))\n    y.add_(1)\n    return x\n"
    assert "x.view((2, -1))" in fixed(src)


FIXABLE_FUNCTIONS = {
    "reshape": "def f(x):\n    y = x.reshape(-1)\n    y[0] = 7\n    return x\n",
    "flatten_dims": "def f(x):\n    y = x.flatten(1)\n    y[:, 0] = 7\n    return x\n",
    "torch_reshape": "def f(x):\n    y = torch.reshape(x, (x.shape[0], -1))\n    y.mul_(3)\n    return x\n",
    "keyword": "def f(x):\n    y = x.reshape(shape=(x.shape[0], -1))\n    y.add_(1)\n    return x\n",
}


@pytest.mark.parametrize("name", list(FIXABLE_FUNCTIONS))
def test_fixes_keep_eager_semantics_on_real_tensors(name):
    """Run the original and both fixed versions with real PyTorch: on a contiguous input the view fix
    behaves like eager reshape (the write reaches x); the clone fix never touches x; on a non-contiguous
    input the view fix aliases or fails loudly, but never silently drops the write."""
    import torch

    import dataclasses

    from analyzer.diagnostics import Applicability

    src = "import torch\n" + FIXABLE_FUNCTIONS[name]
    (d,) = lint_source(src)
    variants = {}
    for fix in d.fixes:
        # the written result is never read again: the copy would make the write dead, so it is only shown
        # (issue 31); applied here by force to show what it would do
        assert (fix.applicability is Applicability.DISPLAY) == fix.title.startswith("Make the copy explicit")
        forced = dataclasses.replace(fix, applicability=Applicability.UNSAFE)
        out = apply_fixes(src, [d.__class__(**{**d.__dict__, "fixes": (forced,)})], unsafe=True)[0]
        variants[fix.title.split(" (")[0]] = out
    assert set(variants) == {"Make the aliasing explicit", "Make the copy explicit"}

    def run(code, x):
        ns = {}
        exec(compile(code, "<fixed>", "exec"), ns)
        return ns["f"](x)

    base = torch.arange(12.0).reshape(3, 4)
    eager = run(src, base.clone())
    assert torch.equal(run(variants["Make the aliasing explicit"], base.clone()), eager)
    assert torch.equal(run(variants["Make the copy explicit"], base.clone()), base)
    # non-contiguous input: the view either aliases (the write reaches x) or raises; it never copies
    strided = base.clone().t()
    before = strided.clone()
    try:
        after = run(variants["Make the aliasing explicit"], strided)
    except RuntimeError as exc:
        assert "view" in str(exc)
    else:
        assert not torch.equal(after, before)


# Calls whose text the TL101 rewrites edit without libcst (analyzer.fixes: text_rewrite), and some they leave to it.
TEXT_CASES = [
    "x.reshape(-1)", "x.reshape(shape=s)", "x.reshape(shape = (2, 3))", "x.reshape(shape=(s))",
    "x.reshape(\n    shape=s,\n)", "x.reshape(  shape  =\n   s  ,  )", "x.reshape(*s)", "(x.reshape)(-1)",
    "(x).reshape(-1)", "(x.y[1:2]).reshape(-1,2)", "x.reshape(-1) .reshape(3)", "f(x)(y).reshape_as(z)",
    "x . reshape ( 1 , 2 )", "x.reshape(shape=[a for a in b if a])", "x.reshape(\tshape\t=\tz)",
    "x.reshape(shape=(z := 3))", "x.reshape(s)  ", "x.reshape('a')", "x.reshape(1,  # c\n 2)", "x.reshape(\u00e9)",
]


@pytest.mark.parametrize("segment", TEXT_CASES)
def test_text_rewrites_render_as_libcst_does(segment):
    import libcst as cst

    from analyzer.fixes import _plain_rewrite
    from rules.base import FixRequest
    from rules.tl101_reshape_inplace import (
        _append_clone,
        _rename_method,
        _reshape_method_to_view,
        _text_append_clone,
    )

    segment = segment.strip()
    rename = _rename_method("view_as")
    for rewrite, text_rewrite in [(_append_clone, _text_append_clone), (_reshape_method_to_view, _reshape_method_to_view.text),
                                  (rename, rename.text)]:
        got = _plain_rewrite(FixRequest("t", None, rewrite, text_rewrite=text_rewrite), segment)
        if got is not None:  # None: libcst builds it
            assert got == cst.Module([]).code_for_node(rewrite(cst.parse_expression(segment)))


def test_simple_fixes_need_no_libcst():
    import subprocess
    import sys

    src = "import torch\ndef f(x):\n    y = x.reshape(-1)\n    y.mul_(2)\n    return x + y\n"
    code = (
        "import sys\nfrom analyzer.static import lint_source\n"
        f"ds = lint_source({src!r})\n"
        "assert [f.title for f in ds[0].fixes] == ['Make the aliasing explicit (use `view`)', 'Make the copy explicit (append `.clone()`)']\n"
        "assert 'libcst' not in sys.modules, 'libcst imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=".")
