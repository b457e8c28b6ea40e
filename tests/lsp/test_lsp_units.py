"""The server's pure parts: positions in each encoding, LSP line breaks, settings, minimal edits, where a
``# noqa`` comment may go."""

from __future__ import annotations

import pytest

pytest.importorskip("pygls")

from analyzer.config import Config  # noqa: E402
from analyzer.lsp.actions import comment_lines, whole_text_edit  # noqa: E402
from analyzer.lsp.settings import EditorSettings, effective_settings, parse_settings  # noqa: E402
from analyzer.lsp.text import UTF8, UTF16, UTF32, TextDocument  # noqa: E402


@pytest.mark.parametrize("encoding, expected", [(UTF16, 4), (UTF8, 7), (UTF32, 3)])
def test_positions_count_code_units_of_the_encoding(encoding, expected):
    doc = TextDocument("u", "ab\nx😀é = 1\n")  # the emoji: 2 UTF-16 units, 4 UTF-8 bytes
    assert doc.lsp_position(2, 4, encoding) == (1, expected)  # the character after "x😀é"
    assert doc.offset_at(1, expected, encoding) == 3 + 3
    assert doc.position_at(6, encoding) == (1, expected)


def test_a_position_inside_a_surrogate_pair_or_past_the_line_end_clamps():
    doc = TextDocument("u", "😀x\nend")
    assert doc.offset_at(0, 1, UTF16) == 1  # inside the pair: after the emoji, never half of it
    assert doc.offset_at(0, 99, UTF16) == 2  # past the end of the line: its end, not the next line
    assert doc.offset_at(9, 0, UTF16) == len(doc.text)


def test_lines_break_only_where_lsp_breaks_them():
    doc = TextDocument("u", "a\fb\x1c\u2028c\r\nd\re\nf")
    assert [doc.line_text(i) for i in range(5)] == ["a\fb\x1c\u2028c", "d", "e", "f", ""]
    doc.apply_change("X", (1, 0), (2, 1))  # across a lone \r
    assert doc.text == "a\fb\x1c\u2028c\r\nX\nf"
    doc.apply_change("whole")
    assert doc.text == "whole" and doc.line_text(0) == "whole"


def test_settings_parse_nested_aliases_and_report_what_they_leave_out():
    got, problems = parse_settings({"thunderLint": {"assume-compiled": "a.*, b.*", "extend_select": ["TL1"],
                                                    "unsafeFixes": "yes", "debounceMs": -1, "colour": 1}})
    assert got.assume_compiled == ("a.*", "b.*") and got.extend_select == ("TL1",)
    assert got.unsafe_fixes is None and got.debounce_ms == EditorSettings().debounce_ms  # bad values: the default
    assert len(problems) == 3 and any("colour" in p for p in problems)
    assert parse_settings([1])[1] == ["settings must be an object, got list"]


def test_editor_settings_go_on_top_of_the_config_like_the_command_line():
    cfg = Config(select=("TL1",), ignore=("TL102",), assume_compiled=("p.*",), target="thunder", root="/r")
    s = effective_settings(cfg, EditorSettings(ignore=("TL103",), assume_compiled=("q.*",)))
    assert (s.select, s.ignore, s.assume_compiled, s.target) == (("TL1",), ("TL102", "TL103"), ("p.*", "q.*"), "thunder")
    s = effective_settings(cfg, EditorSettings(select=("TL2",), target="torch.compile"))
    assert (s.select, s.ignore, s.target) == (("TL2",), (), "torch.compile")


@pytest.mark.parametrize("old, new", [
    ("a = x.reshape(1)\n", "a = x.view(1)\n"),
    ("same\n", "same\n"),
    ("p\r\nq\r\n", "p\r\nQ\r\n"),
    ("😀 a\n", "😀 bb\n"),
])
def test_whole_text_edit_spans_only_the_difference(old, new):
    doc = TextDocument("u", old)
    edit = whole_text_edit(doc, new, UTF16)
    if old == new:
        assert edit is None
        return
    a = doc.offset_at(edit.range.start.line, edit.range.start.character)
    b = doc.offset_at(edit.range.end.line, edit.range.end.character)
    assert old[:a] + edit.new_text + old[b:] == new
    assert len(edit.new_text) < len(new)


def test_comment_lines_exclude_strings_and_continuations():
    text = 'x = 1\ns = """a\nb"""\ny = 1 + \\\n    2\nz = (1,\n     2)\n'
    assert comment_lines(text) == frozenset({1, 3, 5, 6, 7})
    assert comment_lines('s = """never closed\n') is None


def test_assume_compiled_unset_everywhere_leaves_the_library_default_on():
    """None in both the config and the editor: not configured, so the project index may apply the library
    default; an empty list in either turns it off, as `assume-compiled = []` does for the CLI."""
    assert effective_settings(Config(), EditorSettings()).assume_compiled is None
    assert effective_settings(Config(assume_compiled=()), EditorSettings()).assume_compiled == ()
    assert effective_settings(Config(), EditorSettings(assume_compiled=())).assume_compiled == ()
    assert effective_settings(Config(), EditorSettings(assume_compiled=("m.*",))).assume_compiled == ("m.*",)
