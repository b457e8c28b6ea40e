"""lint_source's contract: sorted output, positions, selection, noqa, and no exception on any text."""

import subprocess
import sys

import pytest

from analyzer.selection import SelectionError
from analyzer.static import lint_source

TL101_SRC = "import torch\ndef f(x):\n    y = x.reshape(-1)\n    y.mul_(2)\n    return x\n"
MANY = (
    "import thunder, random\nscale = 2\n@thunder.jit\ndef f(x):\n    print(x)\n    y = x.reshape(-1)\n"
    "    y.add_(scale)\n    return x * random.random()\n"
)


def test_sorted_by_line_column_code():
    ds = lint_source(MANY)
    keys = [(d.line, d.column, d.code) for d in ds]
    assert keys == sorted(keys)
    assert {d.code for d in ds} == {"TL101", "TL201", "TL204"}


def test_positions_are_one_based_with_exclusive_end():
    (d,) = lint_source(TL101_SRC)
    line = TL101_SRC.splitlines()[d.line - 1]
    assert line[d.column - 1 : d.end_column - 1] == "y.mul_(2)"
    assert d.path == "<string>" and d.origin == "static" and d.severity.value == "error"


def test_columns_count_characters_not_bytes():
    src = "import torch\ndef f(x):\n    y = x.reshape(-1)\n    é = 1; y.mul_(2)\n    return x\n"
    (d,) = lint_source(src)
    line = src.splitlines()[d.line - 1]
    assert line[d.column - 1 : d.end_column - 1] == "y.mul_(2)"


def test_select_ignore_prefixes():
    assert {d.code for d in lint_source(MANY, select=["TL2"])} == {"TL201", "TL204"}
    assert {d.code for d in lint_source(MANY, ignore=["TL2"])} == {"TL101"}
    assert {d.code for d in lint_source(MANY, select=["TL201"], extend_select=["TL101"])} == {"TL101", "TL201"}
    with pytest.raises(SelectionError):
        lint_source(MANY, select=["XX9"])


@pytest.mark.parametrize(
    "comment, kept",
    [
        ("  # noqa", False),
        ("  # noqa: TL101", False),
        ("  # NOQA:TL1", False),
        ("  # noqa: TL102, TL101", False),
        ("  # noqa: TL2", True),
        ("  # noqa: E501", True),
        ("", True),
    ],
)
def test_noqa(comment, kept):
    src = TL101_SRC.replace("y.mul_(2)", "y.mul_(2)" + comment)
    assert bool(lint_source(src)) is kept


def test_syntax_error_is_tl001_at_the_parser_position():
    (d,) = lint_source("x = 1\ndef f(:\n    pass\n", select=["TL101"])
    assert (d.code, d.name, d.line, d.column) == ("TL001", "syntax-error", 2, 7)
    assert "syntax" in d.message


def test_null_byte_is_tl001_at_its_position():
    (d,) = lint_source("x = 1\ny = 2\0\n")
    assert (d.code, d.line, d.column) == ("TL001", 2, 6)


def test_thousand_deep_nesting_is_one_tl001():
    for src in ["x = " + "(" * 1000 + "1" + ")" * 1000, "x = " + "[" * 1000 + "]" * 1000, "x = " + "-" * 100000 + "1"]:
        ds = lint_source(src)
        assert [d.code for d in ds] == ["TL001"]
        assert ds[0].line == 1


@pytest.mark.parametrize("terms", [500, 995, 3000])
def test_deep_expressions_give_one_tl001_and_keep_what_the_other_rules_found(terms):
    # long chained sums make deep trees: the parser may refuse them, or a rule may run out of depth
    import ast

    src = (
        "import torch\nscale = 2\n@torch.compile\ndef f(x):\n    y = " + " + ".join(["x"] * terms) + "\n"
        "    if y.sum() > 0:\n        return y * scale\n    return y\n"
    )
    ds = lint_source(src)
    assert len([d for d in ds if d.code == "TL001"]) <= 1
    try:
        ast.parse(src)
    except RecursionError:
        assert [d.code for d in ds] == ["TL001"]
    else:
        assert "TL201" in {d.code for d in ds}  # a rule that never recurses into the sum still reports


@pytest.mark.parametrize(
    "text",
    ["", "\n", "   ", "\ufeffimport torch\n", "x = 1\r\ny = 2\r\n", "x = 1\ry = 2\r", "\x0c\nimport os\n", "'''", "\\"],
)
def test_odd_texts_never_raise(text):
    ds = lint_source(text)
    assert all(d.code == "TL001" for d in ds)


def test_old_mac_line_endings_still_find_tl101():
    src = TL101_SRC.replace("\n", "\r")
    assert [d.line for d in lint_source(src)] == [4]


def test_large_file_is_linted():
    body = "".join(f"def f{i}(x):\n    y = x.view(-1)\n    return y + {i}\n" for i in range(20000))
    src = "import torch\n" + body + TL101_SRC.replace("import torch\n", "")
    ds = lint_source(src, with_fixes=False)
    assert [d.code for d in ds] == ["TL101"]


def test_without_fixes_libcst_is_never_imported():
    code = (
        "import sys\nfrom analyzer.static import lint_source\n"
        f"ds = lint_source({TL101_SRC!r}, with_fixes=False)\n"
        "assert ds and not ds[0].fixes\n"
        "assert 'libcst' not in sys.modules, 'libcst imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=".")


def test_configured_jit_decorator():
    src = "import mylib\nscale = 2\n@mylib.fast\ndef f(x):\n    return x * scale\n"
    assert lint_source(src) == []
    assert [d.code for d in lint_source(src, jit_decorators=["mylib.fast"])] == ["TL201"]
    assert [d.code for d in lint_source(src, jit_decorators=["fast"])] == ["TL201"]


def test_json_shape_of_a_fix():
    (d,) = lint_source(TL101_SRC)
    j = d.to_json()
    assert j["fixes"][0]["applicability"] == "unsafe"
    assert j["fixes"][0]["edits"][0] == {"line": 3, "column": 11, "end_line": 3, "end_column": 18, "content": "view"}


def test_old_mac_line_endings_still_find_jit_calls():
    src = "import thunder\nx = 5\ndef foo():\n    return x\njfoo = thunder.jit(foo)\n".replace("\n", "\r")
    assert [(d.code, d.line) for d in lint_source(src)] == [("TL201", 4)]
