"""Parsing submitted text: no file is read for it, compile-time errors are TL001, newer syntax is named,
and running out of memory is said as such (never "too deeply nested")."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from analyzer.parsing import PSEUDO_FILENAME, compile_error, parse
from analyzer.static import lint_source

COMPILE_TIME_ERRORS = [
    ("return 1\n", "'return' outside function", (1, 1)),
    ("import os\nnonlocal x\n", "nonlocal declaration not allowed at module level", (2, 1)),
    ("await x\n", "'await' outside function", (1, 1)),
    ("def f(a, b, a):\n    pass\n", "duplicate argument 'a' in function definition", (1, 13)),
    ("def f():\n    await g()\n", "'await' outside async function", (2, 5)),
    ("for x in y:\n    pass\nbreak\n", "'break' outside loop", (3, 1)),
    ("def f():\n    x = 1\n    global x\n", "name 'x' is assigned to before global declaration", (3, 5)),
]


@pytest.mark.parametrize("src, message, position", COMPILE_TIME_ERRORS)
def test_compile_time_errors_are_tl001(src, message, position):
    (d,) = lint_source(src, "m.py")
    assert d.code == "TL001"
    assert d.message == f"syntax error: {message}"
    assert (d.line, d.column) == position


def test_valid_code_compiles_clean():
    src = "async def f():\n    await g()\n    return [x async for x in h()]\n\ndef k(*a, **kw):\n    nonlocal_ = 1\n"
    assert lint_source(src) == []
    assert compile_error(parse(src)) is None


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the grammar of 3.12 accepts these")
@pytest.mark.parametrize(
    "src, what",
    [
        ("type Vector = list[float]\n", "PEP 695 type statement"),
        ("def first[T](xs: list[T]) -> T:\n    return xs[0]\n", "PEP 695 type parameters"),
        ("class Box[T]:\n    pass\n", "PEP 695 type parameters"),
        ("name = 'x'\nmsg = f'{'a' + name}'\n", "PEP 701 f-string"),
    ],
)
def test_newer_syntax_names_the_python_it_needs(src, what):
    (d,) = lint_source(src, "new.py")
    assert d.code == "TL001"
    assert f"this is {what} syntax, which needs Python 3.12+" in d.message
    assert "runs on Python 3.11" in d.message


def test_plain_syntax_errors_get_no_version_note():
    for src in ["def f(:\n", "typo x = 1\n", "x = f'{'\n"]:
        (d,) = lint_source(src)
        assert "needs Python" not in d.message, d.message


def test_the_pseudo_file_name_cannot_name_a_file():
    with pytest.raises(UnicodeEncodeError):
        PSEUDO_FILENAME.encode(sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())


def test_syntax_error_text_never_comes_from_the_named_path(tmp_path):
    """The path is a label: a file by that name, with other text, changes nothing."""
    src = "x = 1\nclass C(:\n    pass\n"
    decoy = tmp_path / "decoy.py"
    decoy.write_text("a\nb\n")  # a short line 2: CPython used to clip the column to it
    here = [(d.line, d.column, d.end_line, d.end_column, d.message) for d in lint_source(src, str(decoy))]
    assert here == [(d.line, d.column, d.end_line, d.end_column, d.message) for d in lint_source(src, "elsewhere.py")]
    (d,) = lint_source(src, str(decoy))
    assert (d.line, d.column) == (2, 9)


def test_out_of_memory_is_not_called_nesting():
    """A real MemoryError: a 3 MB file parsed under a small address-space limit."""
    code = textwrap.dedent(
        """
        import resource, sys
        from analyzer.static import lint_source
        text = "".join(f"def f{i}(x):\\n    y = x.reshape(-1)\\n    y.add_(1)\\n    return x\\n\\n" for i in range(60000))
        used = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (used + 200 * 2**20, resource.RLIM_INFINITY))
        (d,) = lint_source(text, "big.py")
        print(d.code, d.message)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("TL002 Cannot lint this file: out of memory"), out.stdout
    assert "nested" not in out.stdout


def test_text_that_cannot_fail_to_compile_skips_the_compile():
    data = "x = [" + "1, " * 1000 + "]\n"
    assert compile_error(parse(data), data) is None
    for src, _, _ in COMPILE_TIME_ERRORS:  # every listed error is still found through the text filter
        assert compile_error(parse(src), src) is not None, src
    starred = "*a = [1, 2]\n"
    assert compile_error(parse(starred), starred).msg == "starred assignment target must be in a list or tuple"


@pytest.mark.parametrize("src", ["x = 1\n", "def f(:\n", "return 1\n", "@torch.compile\ndef f(x):\n    return x.reshape(-1).add_(1)\n"])
def test_lint_pauses_the_collector_and_restores_it(src, monkeypatch):
    """The collector is off while a file is linted (full collections would rescan the tree) and comes back
    as it was, on every outcome; one that was off stays off."""
    import gc

    from analyzer.static import engine

    seen = []
    real = engine.parse
    monkeypatch.setattr(engine, "parse", lambda text: (seen.append(gc.isenabled()), real(text))[1])
    assert gc.isenabled()
    lint_source(src, "m.py")
    assert gc.isenabled() and seen == [False]
    gc.disable()
    try:
        lint_source(src, "m.py")
        assert not gc.isenabled()
    finally:
        gc.enable()
