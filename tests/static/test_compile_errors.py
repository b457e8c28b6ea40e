"""analyzer.compile_check against compile() as the oracle: wherever compiling a parsed tree raises SyntaxError,
``may_fail_to_compile`` must say True (else compile_error would lose the finding); on ordinary code it must say
False (else it saves nothing)."""

from __future__ import annotations

import ast
import random
import textwrap

import pytest

from analyzer.compile_check import may_fail_to_compile
from analyzer.parsing import PSEUDO_FILENAME, compile_error, parse

# One snippet per compile-time error kind (CPython 3.11-3.13), each compiles to a SyntaxError here.
ERRORS = {
    "return outside function": "return 1\n",
    "return in class body": "class A:\n    return\n",
    "return starred": "def f(a):\n    return *a\n",
    "yield outside function": "x = (yield)\n",
    "yield in class body": "def f():\n    class A:\n        yield\n",
    "yield in comprehension": "def f(z):\n    x = [(yield) for y in z]\n",
    "yield in genexp": "def f(z):\n    x = list((yield y) for y in z)\n",
    "yield starred": "def f(a):\n    yield *a\n",
    "yield in annotation (future)": "from __future__ import annotations\ndef f():\n    x: (yield) = 1\n",
    "yield in parameter annotation": "def f(x: (yield)): pass\n",
    "yield from in async": "async def f(x):\n    yield from x\n",
    "return value in async generator": "async def f():\n    yield 1\n    return 2\n",
    "await outside function": "await x\n",
    "await outside async": "def f():\n    await g()\n",
    "await in lambda": "async def f():\n    return lambda: await g()\n",
    "async for outside async": "def f(y):\n    async for x in y:\n        pass\n",
    "async with outside async": "def f():\n    async with x:\n        pass\n",
    "async comprehension outside async": "def f(y):\n    return [x async for x in y]\n",
    "break outside loop": "for x in y:\n    pass\nbreak\n",
    "break in loop else": "def f():\n    for x in y:\n        pass\n    else:\n        break\n",
    "continue in nested def": "while x:\n    def f():\n        continue\n",
    "continue in class in loop": "for x in y:\n    class A:\n        continue\n",
    "nonlocal at module": "import os\nnonlocal x\n",
    "nonlocal without binding": "def f():\n    nonlocal x\n",
    "nonlocal without binding in outer": "def g():\n    y = 1\n    def f():\n        nonlocal x\n",
    "nonlocal bound only as global outside": "def g():\n    global x\n    x = 1\n    def f():\n        nonlocal x\n",
    "nonlocal after use": "def g():\n    x = 1\n    def f():\n        print(x)\n        nonlocal x\n",
    "nonlocal after assignment in block": "def g():\n    x = 1\n    def f():\n        if x:\n            x = 2\n            nonlocal x\n",
    "nonlocal parameter": "def g():\n    x = 1\n    def f(x):\n        nonlocal x\n",
    "nonlocal annotated": "def g():\n    x = 1\n    def f():\n        nonlocal x\n        x: int = 2\n",
    "nonlocal and global": "def g():\n    x = 1\n    def f():\n        global x\n        nonlocal x\n",
    "global after assignment": "def f():\n    x = 1\n    global x\n",
    "global after use": "def f():\n    print(x)\n    global x\n",
    "global after del": "def f():\n    x = 1\n    del x\n    global x\n",
    "global in block after use": "def f():\n    y = x\n    if y:\n        global x\n",
    "global after for target": "def f():\n    for x in y:\n        pass\n    global x\n",
    "global after except name": "def f():\n    try:\n        pass\n    except E as x:\n        pass\n    global x\n",
    "module global after assignment": "x = 1\nglobal x\n",
    "global parameter": "def f(x):\n    global x\n",
    "global kw-only parameter": "def f(*, x):\n    global x\n",
    "global annotated": "def f():\n    global x\n    x: int = 1\n",
    "annotated then global": "def f():\n    x: int\n    global x\n",
    "class global annotated": "class A:\n    global x\n    x: int\n",
    "duplicate argument": "def f(a, b, a):\n    pass\n",
    "duplicate kw-only": "def f(a, *, a):\n    pass\n",
    "duplicate posonly": "def f(a, /, a):\n    pass\n",
    "duplicate varargs": "def f(*a, **a):\n    pass\n",
    "duplicate lambda argument": "g = lambda a, a: 0\n",
    "keyword repeated": "f(a=1, a=2)\n",
    "keyword repeated over lines": "f(\n    a=1,\n    b=2,\n    a=3,\n)\n",
    "keyword repeated after comment": "f(\n    a=1,  # first\n    # more\n    a=3,\n)\n",
    "keyword repeated after **": "f(**k, b=1, b=2)\n",
    "keyword repeated with string between": "f(a=')', a=2)\n",
    "keyword repeated in class header": "class A(x=1, x=2):\n    pass\n",
    "keyword repeated, = on next line": "f(a\n  =1, a=2)\n",
    "keyword repeated, backslash": "f(a=1, \\\n  a=2)\n",
    "keyword repeated in nested call": "x = g(h(a=1, a=2))\n",
    "keyword repeated in lambda": "g = lambda: f(a=1, a=2)\n",
    "keyword repeated in def default": "def f(x=g(a=1, a=2)):\n    pass\n",
    "keyword repeated in decorator": "@d(a=1, a=2)\ndef f():\n    pass\n",
    "keyword repeated in if test": "if f(a=1, a=2):\n    pass\n",
    "keyword repeated in except clause": "try:\n    pass\nexcept f(\n    a=1,\n    a=2,\n):\n    pass\n",
    "keyword repeated in with item": "with f(\n    a=1,\n    a=2,\n):\n    pass\n",
    "keyword repeated in class header over lines": "class A(B,\n        x=1,\n        x=2):\n    pass\n",
    "keyword repeated in def default over lines": "def f(x=g(\n    a=1,\n    a=2)):\n    pass\n",
    "keyword repeated in docstring def": 'def f():\n    """Doc for a."""\n    return g(a=1, a=2)\n',
    "keyword repeated non-ascii": "f(\uff41=1, a=2)\n",
    "keyword repeated after a string on its last line": 'x = 1\n"""doc for\n    a=1, a=2"""; f(a=1, a=2)\n',
    "starred comprehension target after a string on its last line": 'x = 1\n"""doc for\n"""; x = [x for *a in y]\n',
    "duplicate lambda argument after a string on its last line": 'x = 1\n"""doc for\nlambda"""; g = lambda a, a: 0\n',
    "keyword repeated before a string on its first line": 'f(a=1, a=2); """doc for\n    a=1, a=2"""\n',
    "starred assignment target": "*a = [1, 2]\n",
    "multiple starred": "a, *b, *c = d\n",
    "multiple starred nested": "a, (b, *c, *d) = e\n",
    "starred for target": "for *a in b:\n    pass\n",
    "starred with target": "with a as *b:\n    pass\n",
    "starred comprehension target": "x = [x for *a in y]\n",
    "starred dict comprehension target": "x = {a: b for *a in c}\n",
    "starred comprehension target over lines": "x = [x for (a,\n    *b, *c) in y]\n",
    "starred comprehension target after subscript": "x = [1 for a[i], *b, *c in y]\n",
    "starred value": "x = *a\n",
    "starred expression statement": "*a\n",
    "starred for iterable": "for x in *a:\n    pass\n",
    "starred augassign": "x += *a\n",
    "starred annassign": "x: int = *a\n",
    "too many star-unpacking": "(" + ", ".join(f"a{i}" for i in range(300)) + ", *rest) = x\n",
    "__debug__ assign": "__debug__ = 1\n",
    "__debug__ parameter": "def f(__debug__):\n    pass\n",
    "__debug__ keyword": "f(__debug__=1)\n",
    "__debug__ attribute": "x.__debug__ = 1\n",
    "__debug__ import": "import a as __debug__\n",
    "__debug__ del": "del __debug__\n",
    "__debug__ compatibility spelling": "\uff3f_debug__ = 1\n",
    "future not first": "import os\nfrom __future__ import annotations\n",
    "future after two docstrings": "'''a'''\n'''b'''\nfrom __future__ import annotations\n",
    "future after bytes": "b'x'\nfrom __future__ import annotations\n",
    "future unknown": "from __future__ import nope\n",
    "future braces": "from __future__ import braces\n",
    "future nested": "from __future__ import annotations\nif x:\n    from __future__ import annotations\n",
    "import star in function": "def f():\n    from x import *\n",
    "import star in class": "class A:\n    from x import *\n",
    "default except not last": "try:\n    pass\nexcept:\n    pass\nexcept ValueError:\n    pass\n",
    "break in except star": "for x in y:\n    try:\n        pass\n    except* ValueError:\n        break\n",
    "walrus rebinds iteration variable": "def f(z):\n    return [(y := 1) for y in z]\n",
    "walrus in comprehension iterable": "def f():\n    return [1 for y in (z := [1])]\n",
    "walrus comprehension in class": "class A:\n    x = [(y := 1) for a in z]\n",
    "walrus in annotation (future)": "from __future__ import annotations\nx: (y := int) = 1\n",
    "inner loop rebinds walrus target": "def f():\n    return [i := 0 for i, j in x]\n",
    "match duplicate capture": "match x:\n    case [a, a]:\n        pass\n",
    "match irrefutable first": "match x:\n    case a:\n        pass\n    case 1:\n        pass\n",
    "too many nested blocks": "".join("    " * i + f"for x{i} in y:\n" for i in range(21)) + "    " * 21 + "pass\n",
    "too many nested with": "".join("    " * i + f"with a{i}:\n" for i in range(21)) + "    " * 21 + "pass\n",
}

# Contexts each error is also checked in: inside a function, a class's method, a loop, behind a docstring.
CONTEXTS = {
    "module": lambda src: src,
    "after docstring": lambda src: src if src.startswith(("from __future__", "'''", "b'")) else '"""Module."""\n' + src,
    "in function": lambda src: "def outer():\n" + textwrap.indent(src, "    "),
    "in method": lambda src: "class K:\n    def m(self):\n" + textwrap.indent(src, "        "),
    "in loop": lambda src: "for _i in range(3):\n" + textwrap.indent(src, "    "),
    "after code": lambda src: "import os\nx = os.sep\n\n\n" + src if not src.startswith(("from __future__", "'''", "b'")) else src,
}


def _compile_raises(src: str) -> SyntaxError | None:
    try:
        compile(parse(src), PSEUDO_FILENAME, "exec", 0, dont_inherit=True)
    except SyntaxError as e:
        return e
    return None


def test_every_listed_error_is_a_compile_time_error():
    """The table holds only trees that parse and then fail to compile (so the oracle has something to say)."""
    for kind, src in ERRORS.items():
        assert _compile_raises(src) is not None, kind


@pytest.mark.parametrize("context", sorted(CONTEXTS))
@pytest.mark.parametrize("kind", sorted(ERRORS))
def test_the_check_says_maybe_wherever_compile_fails(kind, context):
    src = CONTEXTS[context](ERRORS[kind])
    try:
        tree = parse(src)
    except SyntaxError:
        pytest.skip("the context makes it a parse error")
    error = _compile_raises(src)
    if error is None:
        pytest.skip("valid in this context")
    assert may_fail_to_compile(tree, src), f"{kind} / {context}: compile says {error.msg!r}"
    assert compile_error(tree, src) is not None


VALID = [
    # a typical modeling file's constructs: none of them may be flagged, or nothing is saved
    textwrap.dedent('''\
        """Model."""
        from __future__ import annotations

        import math
        from typing import Any

        import torch
        from torch import nn

        from .configuration import Config  # for the config

        __all__ = ["Model"]
        _CACHE: dict[str, Any] = {}


        def rotate_half(x):
            """Rotates half the hidden dims of the input, for rope."""
            x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
            return torch.cat((-x2, x1), dim=-1)


        class Attention(nn.Module):
            def __init__(self, config: Config, layer_idx: int | None = None, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.scale = config.head_dim**-0.5
                self.proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
                self.layers = nn.ModuleList([nn.Linear(4, 4, bias=True) for _ in range(config.num_layers)])

            def forward(self, hidden_states: torch.Tensor, mask=None, **kwargs) -> tuple[torch.Tensor, ...]:
                # for each head, in order
                for i, (layer, other) in enumerate(zip(self.layers, self.layers)):
                    with torch.no_grad():
                        hidden_states = layer(hidden_states)
                    if i % 2:
                        continue
                    while False:
                        break
                out = torch.softmax(hidden_states.sum(dim=-1) + hidden_states.mean(dim=-1), dim=-1)
                out = out.to(
                    dtype=torch.float32,
                    device=hidden_states.device,
                )
                try:
                    import flash_attn  # noqa: F401
                except ImportError:
                    pass
                else:
                    pass
                finally:
                    pass
                return out, *kwargs.values()


        def _probe():
            global _CACHED
            _CACHED = {k: v for k, v in _CACHE.items() if v is not None}
            return sorted(_CACHED, key=lambda k: (len(k), k))


        def gen(xs):
            yield from xs
            yield max(xs, key=len)
            if (n := len(xs)) > 1:
                return n
        '''),
    "x = [*range(3), *range(2)]\nprint(*x, sep=', ')\n",
    "a, *rest = [1, 2, 3]\nfor b, *c in [rest]:\n    (d, *e), f = c, 1\n",
    # a closure counter, and a late global (after an import) that no earlier statement names
    "def outer():\n    count = 0\n    def inner():\n        nonlocal count\n        count += 1\n    return inner\n",
    "def load():\n    \"\"\"Doc.\"\"\"\n    from os import path\n\n    global _kernels\n    _kernels = path.sep\n",
    "def f():\n    pass\n",
    "x = 1\n",
]


@pytest.mark.parametrize("src", VALID)
def test_ordinary_code_is_proven_fine(src):
    tree = parse(src)
    assert _compile_raises(src) is None
    assert not may_fail_to_compile(tree, src)


def _random_program(rng: random.Random, budget: list, depth: int = 0) -> list[str]:
    """A random nest of blocks (``budget``: statements left) and the statements that are errors in some places only."""
    lines = []
    for _ in range(rng.choice([1, 1, 1, 2])):
        budget[0] -= 1
        kind = rng.choice(["for", "while", "with", "with2", "try", "tryf", "def", "class", "if", "leaf"])
        if depth > 24 or budget[0] <= 0 or rng.random() < 0.1:
            kind = "leaf"
        if kind == "leaf":
            lines.append(rng.choice(["pass", "break", "continue", "return", "return 1", "x = 1", "yield",
                                     "global g", "f(a=1, b=2)", "f(a=1, a=2)" if rng.random() < 0.1 else "f(a=1)"]))
            continue
        header = {"for": "for i in y:", "while": "while x:", "with": "with a:", "with2": "with a, b:",
                  "try": "try:", "tryf": "try:", "def": "def f():", "class": "class C:", "if": "if x:"}[kind]
        lines += [header] + ["    " + line for line in _random_program(rng, budget, depth + 1)]
        if kind == "try":
            lines += ["except E:"] + ["    " + line for line in _random_program(rng, budget, depth + 1)]
        if kind == "tryf":
            lines += ["finally:"] + ["    " + line for line in _random_program(rng, budget, depth + 1)]
        if kind in ("for", "while") and rng.random() < 0.3:
            lines += ["else:"] + ["    " + line for line in _random_program(rng, budget, depth + 1)]
    return lines


def test_random_nests_against_compile():
    """Loops, with, try/finally, defs and classes nested at random (up to the block limit and past it), with
    break/continue/return/yield/global in them: wherever compile() fails, the check says maybe."""
    rng = random.Random(1193)
    failing = proven = 0
    for _ in range(3000):
        src = "\n".join(_random_program(rng, [40])) + "\n"
        try:
            tree = parse(src)
        except (SyntaxError, RecursionError):
            continue
        says = may_fail_to_compile(tree, src)
        if _compile_raises(src) is not None:
            failing += 1
            assert says, src
        elif not says:
            proven += 1
    assert failing > 100 and proven > 100  # both outcomes occur: the test can fail either way


def test_nesting_limit_is_flagged_just_below_the_limit_only_with_margin():
    """20 nested loops compile, 21 do not; the check proves a shallow nest fine."""
    def nest(n):
        return "".join("    " * i + f"for x{i} in y:\n" for i in range(n)) + "    " * n + "pass\n"
    assert _compile_raises(nest(20)) is None and _compile_raises(nest(21)) is not None
    assert may_fail_to_compile(parse(nest(21)), nest(21))
    assert not may_fail_to_compile(parse(nest(5)), nest(5))


def test_positions_of_the_compiled_error_are_kept():
    src = "import os\n\n\ndef f(a, a):\n    pass\n"
    err = compile_error(parse(src), src)
    assert (err.msg, err.lineno) == ("duplicate argument 'a' in function definition", 4)


def test_error_table_covers_each_kind_once():
    assert len(ERRORS) >= 90 and len(set(ERRORS.values())) == len(ERRORS)


def test_keyword_names_in_separate_calls_do_not_force_a_compile():
    """`dim=` twice in one statement but in two calls, and assignments to one name on consecutive lines, are
    told apart from a repeated keyword without walking or compiling."""
    src = "x = a.sum(dim=-1) + b.sum(dim=-1)\nx = 1\nx = 2\nout = f(\n    dim=1,\n)\nout = g(\n    dim=1,\n)\n"
    assert not may_fail_to_compile(ast.parse(src), src)
    bad = "out = f(\n    dim=1,\n    dim=2,\n)\n"
    assert may_fail_to_compile(ast.parse(bad), bad)


def _hosts() -> list[str]:
    """Real files of this repository to plant errors in (their comments, docstrings, calls and comprehensions
    are what the text scans must see past)."""
    import analyzer.compile_check
    import analyzer.parsing
    import analyzer.static.engine
    import analyzer.static.module_index

    return [open(m.__file__, encoding="utf-8").read() for m in (
        analyzer.compile_check, analyzer.parsing, analyzer.static.engine, analyzer.static.module_index)]


@pytest.mark.parametrize("host", range(4))
def test_errors_planted_in_real_files_are_found(host):
    """Each error kind planted before a random statement of a real file (at that statement's indentation):
    wherever compile() then fails, the check says maybe."""
    text = _hosts()[host]
    lines = text.splitlines(keepends=True)
    starts = sorted({(s.lineno, s.col_offset) for s in ast.walk(parse(text)) if isinstance(s, ast.stmt)
                     and lines[s.lineno - 1][: s.col_offset].strip() == ""
                     and not (isinstance(s, (ast.FunctionDef, ast.ClassDef)) and s.decorator_list)})
    rng = random.Random(host)
    checked = 0
    for kind, snippet in sorted(ERRORS.items()):
        for lineno, col in rng.sample(starts, 3):
            planted = "".join(lines[: lineno - 1]) + textwrap.indent(snippet, " " * col) + "".join(lines[lineno - 1 :])
            try:
                tree = parse(planted)
            except (SyntaxError, RecursionError):
                continue
            if _compile_raises(planted) is not None:
                checked += 1
                assert may_fail_to_compile(tree, planted), f"{kind} planted at line {lineno}"
    assert checked > 150


def test_the_bench_finds_the_new_projects_where_the_corpus_variable_says(tmp_path, monkeypatch):
    """bench/compile_check.py's default folders include the projects under $THUNDER_LINT_BENCH_CORPUS/new, where
    bench/precision_new_projects.py unpacks them."""
    import importlib.util
    from pathlib import Path

    (tmp_path / "new" / "someproject").mkdir(parents=True)
    (tmp_path / "new" / "wheels").mkdir()
    monkeypatch.setenv("THUNDER_LINT_BENCH_CORPUS", str(tmp_path))
    path = Path(__file__).resolve().parents[2] / "bench" / "compile_check.py"
    spec = importlib.util.spec_from_file_location("_compile_check_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert tmp_path / "new" / "someproject" in bench.default_folders()
    assert tmp_path / "new" / "wheels" not in bench.default_folders()
