"""FileContext.functions_matching searches each function's lines in place in the file's text: it must pick exactly
the functions whose own lines, joined alone, match (line ends \\n, \\r\\n or a lone \\r; line anchors, word
boundaries and look-behinds; not `\\A` or `^` without re.M, which anchor at the text's start)."""

import ast
import re
from pathlib import Path

import pytest

from analyzer.static.context import FileContext
from analyzer.static.source import SourceFile
from rules.tl101_reshape_inplace import INPLACE_TEXT, MAYBE_VIEW_TEXT

REPO = Path(__file__).resolve().parents[2]
PATTERNS = [INPLACE_TEXT, MAYBE_VIEW_TEXT, re.compile(r"\bself\b"), re.compile(r"^\s*return\s*$", re.M),
            re.compile(r"\)\s*\Z"), re.compile(r"^\s*@", re.M), re.compile(r"(?<![\w.])def ")]


def _joined_alone(ctx, lines, pattern):
    out = []
    for info in ctx.functions_with_lines(lines):
        n = info.node
        start = n.decorator_list[0].lineno if n.decorator_list else n.lineno
        if pattern.search("\n".join(ctx.source.lines[start - 1 : n.end_lineno])):
            out.append(info.qualname)
    return out


@pytest.mark.parametrize("path", sorted(REPO.glob("rules/*.py"))[:12] + sorted(REPO.glob("examples/*.py")),
                         ids=lambda p: p.name)
@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_the_functions_whose_own_lines_match(path, end):
    text = path.read_text().replace("\n", end)
    ctx = FileContext(SourceFile(text, str(path)), ast.parse(text))
    every = list(range(1, len(ctx.source.lines) + 1))
    for lines in (every, every[::5]):
        for pattern in PATTERNS:
            assert [i.qualname for i in ctx.functions_matching(lines, pattern)] == _joined_alone(ctx, lines, pattern)
