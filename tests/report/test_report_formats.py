"""The reporters are pure functions of the diagnostics: checked here on hand-made findings."""

from __future__ import annotations

import json

import pytest

from analyzer.diagnostics import Applicability, Diagnostic, Edit, Fix, Severity
from analyzer.report import FORMATS, render, render_statistics
from analyzer.report.github import escape_data, escape_property

SOURCE = "def f(x):\n    y = x.reshape(-1)\n    y.add_(1)\n    return x\n"


def diag(code="TL101", line=2, column=9, end_line=2, end_column=22, path="pkg/model.py", message="in-place add_ on a reshape", fixes=(), severity=Severity.ERROR, name="reshape-inplace"):
    return Diagnostic(code, name, severity, message, path, line, column, end_line, end_column, "static", tuple(fixes))


VIEW_FIX = Fix("Make the aliasing explicit", Applicability.UNSAFE, (Edit(2, 11, 2, 18, "view"),))
SAFE_FIX = Fix("Remove the print", Applicability.SAFE, (Edit(3, 5, 3, 13, "pass"),))


def test_concise_one_line_per_finding_sorted():
    out = render([diag(line=3, column=5, end_line=3, end_column=9), diag()], "concise")
    assert out == (
        "pkg/model.py:2:9: TL101 in-place add_ on a reshape\n"
        "pkg/model.py:3:5: TL101 in-place add_ on a reshape\n"
    )


def test_concise_marks_fixability():
    out = render([diag(fixes=[VIEW_FIX]), diag(code="TL204", name="side-effect-call", line=3, fixes=[SAFE_FIX])], "concise")
    lines = out.splitlines()
    assert lines[0].startswith("pkg/model.py:2:9: TL101 [-] ")  # unsafe only: needs --unsafe-fixes
    assert lines[1].startswith("pkg/model.py:3:9: TL204 [*] ")


def test_full_shows_source_with_caret_under_the_span():
    out = render([diag(fixes=[VIEW_FIX])], "full", sources={"pkg/model.py": SOURCE})
    lines = out.splitlines()
    assert lines[0] == "pkg/model.py:2:9: TL101 [-] in-place add_ on a reshape"
    assert "2 |     y = x.reshape(-1)" in lines
    caret = next(line for line in lines if "^" in line)
    # the underline starts under column 9 ("x") and spans 13 characters ("x.reshape(-1)")
    code_start = lines.index("2 |     y = x.reshape(-1)")
    assert caret.index("^") == lines[code_start].index("x.reshape")
    assert caret.count("^") == len("x.reshape(-1)")
    assert "= help: Make the aliasing explicit (unsafe fix)" in out


def test_full_without_sources_still_reports_and_handles_tabs_and_long_lines():
    assert render([diag()], "full") == "pkg/model.py:2:9: TL101 in-place add_ on a reshape\n"
    src = "\tx = 1\n" + "y = " + "a" * 10_000 + "\n"
    out = render([diag(line=1, column=2, end_column=7), diag(line=2, column=5, end_column=10_005)], "full", sources={"pkg/model.py": src})
    assert "    x = 1" in out  # tab expanded
    assert max(len(line) for line in out.splitlines()) < 250  # the 10k-char line is clipped


def test_show_fixes_lists_edits():
    out = render([diag(fixes=[VIEW_FIX])], "concise", show_fixes=True)
    assert "= help: Make the aliasing explicit (unsafe fix)" in out
    assert "2:11-2:18 -> 'view'" in out


def test_json_is_the_design_contract():
    d = diag(fixes=[VIEW_FIX])
    data = json.loads(render([d], "json"))
    assert data == [
        {
            "code": "TL101", "name": "reshape-inplace", "severity": "error", "message": "in-place add_ on a reshape",
            "path": "pkg/model.py", "line": 2, "column": 9, "end_line": 2, "end_column": 22, "origin": "static",
            "fixes": [{"title": "Make the aliasing explicit", "applicability": "unsafe",
                       "edits": [{"line": 2, "column": 11, "end_line": 2, "end_column": 18, "content": "view"}]}],
        }
    ]
    assert Diagnostic.from_json(data[0]) == d
    assert render([], "json") == "[]\n"


def test_json_lines_one_object_per_line():
    out = render([diag(), diag(line=3)], "json-lines")
    lines = out.splitlines()
    assert len(lines) == 2
    assert [json.loads(line)["line"] for line in lines] == [2, 3]
    assert render([], "json-lines") == ""


def test_github_annotation_exact():
    out = render([diag()], "github")
    assert out == "::error file=pkg/model.py,line=2,col=9,endLine=2,endColumn=22,title=TL101::in-place add_ on a reshape\n"


def test_github_escaping_of_properties_and_message():
    d = diag(path="dir,with:odd%chars/m.py", message="50% of\nthe lines: a, b\r", severity=Severity.WARNING)
    out = render([d], "github")
    assert out.startswith("::warning file=dir%2Cwith%3Aodd%25chars/m.py,line=2,")
    assert out.endswith("::50%25 of%0Athe lines: a, b%0D\n")
    assert out.count("\n") == 1
    assert escape_property("a:b,c%") == "a%3Ab%2Cc%25"
    assert escape_data("a:b,c") == "a:b,c"


def test_github_info_is_notice():
    assert render([diag(severity=Severity.INFO)], "github").startswith("::notice ")


def test_statistics_counts_and_orders():
    ds = [diag(), diag(line=3), diag(code="TL201", name="global-capture", fixes=[SAFE_FIX])]
    out = render_statistics(ds)
    assert out.splitlines() == ["2\tTL101\t[ ] reshape-inplace", "1\tTL201\t[*] global-capture"]
    assert render_statistics([]) == ""


def test_unknown_format_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown output format 'xml'"):
        render([], "xml")


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_is_deterministic_and_order_independent(fmt):
    ds = [diag(), diag(code="TL201", name="global-capture", line=1, column=1), diag(path="a.py", fixes=[VIEW_FIX])]
    a = render(ds, fmt, sources={"pkg/model.py": SOURCE})
    b = render(list(reversed(ds)), fmt, sources={"pkg/model.py": SOURCE})
    assert a == b and a


def test_caret_accounts_for_wide_characters():
    src = "s = '日本語'; t.add_(1)\n"
    col = src.index("t.add_") + 1
    out = render([diag(line=1, column=col, end_line=1, end_column=col + 9)], "full", sources={"pkg/model.py": src})
    code_line = next(line for line in out.splitlines() if line.startswith("1 |"))
    caret = next(line for line in out.splitlines() if "^" in line)
    # Three wide characters take six terminal columns: the caret is shifted by three more than code points.
    assert caret.index("^") == code_line.index("t.add_") + 3
    assert caret.count("^") == 9
