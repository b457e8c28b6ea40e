"""A whole editor session over stdio: initialize, open, change, quick fix applied and linted again, noqa,
fix-all, hover, configuration change, syntax error, shutdown (exit status 0, checked by ``session``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsp_helpers import (
    TIMEOUT, apply_text_edits, change_doc, code_actions, codes, diagnostics, edits_of, open_doc, session,
)
from lsprotocol import types
from pygls.uris import to_fs_path

pytestmark = pytest.mark.asyncio

MODELS = '''\
import torch
from torch import nn

scale = 2.0


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        tag = "😀é"; flat = x.reshape(-1); flat.add_(1)
        return self.proj(x) * scale
'''
TRAIN = '''\
import torch

from models import Net

model = torch.compile(Net())
'''


def utf16_col(line: str, index: int) -> int:
    return len(line[:index].encode("utf-16-le")) // 2


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "models.py").write_text(MODELS, encoding="utf-8")
    (root / "train.py").write_text(TRAIN, encoding="utf-8")
    return root


def by_code(diags, code):
    found = [d for d in diags if d.code == code]
    assert found, f"no {code} in {[(d.code, d.message) for d in diags]}"
    return found[0]


async def test_diagnostics_carry_code_severity_utf16_range_doc_link_and_compile_site(workspace, tmp_path):
    async with session(workspace, tmp_path) as client:
        caps = client.init_result.capabilities
        assert caps.position_encoding == types.PositionEncodingKind.Utf16
        assert caps.text_document_sync.change == types.TextDocumentSyncKind.Incremental
        assert caps.hover_provider
        assert "source.fixAll.thunder-lint" in caps.code_action_provider.code_action_kinds

        uri = open_doc(client, workspace / "models.py")
        # TL201 needs the project index: train.py (never opened) compiles Net
        diags = await diagnostics(client, uri, 1, until=lambda ds: {"TL101", "TL201"} <= set(codes(ds)))

        line = MODELS.splitlines()[12]
        tl101 = by_code(diags, "TL101")
        start = line.index("flat.add_(1)")
        assert tl101.range == types.Range(types.Position(12, utf16_col(line, start)),
                                          types.Position(12, utf16_col(line, start + len("flat.add_(1)"))))
        assert utf16_col(line, start) == start + 1  # the emoji before it is two UTF-16 units
        assert tl101.severity == types.DiagnosticSeverity.Error
        assert tl101.source == "thunder-lint"
        doc_page = Path(to_fs_path(tl101.code_description.href))
        assert doc_page.is_file() and doc_page.read_text(encoding="utf-8").startswith("# TL101 (reshape-inplace)")

        tl201 = by_code(diags, "TL201")
        assert tl201.severity == types.DiagnosticSeverity.Warning  # torch.compile: a recompile, not a wrong result
        (related,) = tl201.related_information
        assert related.location.uri == (workspace / "train.py").as_uri()
        assert related.location.range.start == types.Position(4, 0)
        assert related.location.range.end == types.Position(4, len("model = torch.compile(Net())"))
        assert "torch.compile(Net())" in related.message


async def test_change_is_linted_again_and_a_quick_fix_applies(workspace, tmp_path):
    async with session(workspace, tmp_path) as client:
        uri = open_doc(client, workspace / "models.py")
        diags = await diagnostics(client, uri, 1, until=lambda ds: "TL101" in codes(ds))
        text = MODELS

        # an incremental change: `scale` -> `2.0` removes the global read (TL201)
        line = text.splitlines()[13]
        col = line.index("scale")
        edit = types.TextEdit(types.Range(types.Position(13, col), types.Position(13, col + len("scale"))), "2.0")
        change_doc(client, uri, 2, edits=[edit])
        text = apply_text_edits(text, [edit])
        diags = await diagnostics(client, uri, 2)
        assert codes(diags) == ["TL101"]

        tl101 = by_code(diags, "TL101")
        actions = await code_actions(client, uri, tl101.range, [tl101])
        titles = [a.title for a in actions]
        # `flat` is never read after the write: it was meant for `x`, so the copy is only shown, never offered, and
        # the view's title says that TL102 reports the write then (issue 31); unsafe fixes come one by one, marked
        # and never preferred, and no fix-all: it applies safe fixes only by default, and TL101 has none (issue 35)
        assert titles == ["Make the aliasing explicit (use `view`; TL102 then reports the write to the input `x`) "
                          "(TL101) (unsafe fix)",
                          "Add `# noqa: TL101` (suppress this finding on line 13)"], titles
        assert not any(a.is_preferred for a in actions)
        view = actions[0]
        assert view.kind == types.CodeActionKind.QuickFix and view.diagnostics[0].code == "TL101"

        edits = edits_of(view, uri, version=2)
        text = apply_text_edits(text, edits)
        assert 'tag = "😀é"; flat = x.view(-1); flat.add_(1)' in text
        change_doc(client, uri, 3, edits=edits)
        diags = await diagnostics(client, uri, 3)
        assert codes(diags) == ["TL102"] and by_code(diags, "TL102").range.start.line == tl101.range.start.line


async def test_noqa_action_suppresses_the_finding(workspace, tmp_path):
    async with session(workspace, tmp_path) as client:
        uri = open_doc(client, workspace / "models.py")
        diags = await diagnostics(client, uri, 1, until=lambda ds: "TL201" in codes(ds))
        tl201 = by_code(diags, "TL201")
        actions = await code_actions(client, uri, tl201.range, [tl201], only=[types.CodeActionKind.QuickFix])
        (noqa,) = [a for a in actions if "noqa" in a.title]
        text = apply_text_edits(MODELS, edits_of(noqa, uri, version=1))
        assert text.splitlines()[13] == "        return self.proj(x) * scale  # noqa: TL201"
        change_doc(client, uri, 2, new_text=text)
        assert codes(await diagnostics(client, uri, 2)) == ["TL101"]


async def test_fix_all_is_safe_fixes_only_by_default(workspace, tmp_path):
    async with session(workspace, tmp_path) as client:
        uri = open_doc(client, workspace / "models.py")
        await diagnostics(client, uri, 1, until=lambda ds: "TL101" in codes(ds))
        whole = types.Range(types.Position(0, 0), types.Position(0, 0))
        # a save action asking for source.fixAll gets nothing: TL101's fixes are unsafe (`view` can raise)
        assert await code_actions(client, uri, whole, only=["source.fixAll"]) == []


async def test_fix_all_applies_unsafe_fixes_when_the_config_says_unsafe_fixes(workspace, tmp_path):
    (workspace / "pyproject.toml").write_text("[tool.thunder-lint]\nunsafe-fixes = true\n", encoding="utf-8")
    async with session(workspace, tmp_path) as client:
        uri = open_doc(client, workspace / "models.py")
        await diagnostics(client, uri, 1, until=lambda ds: "TL101" in codes(ds))
        whole = types.Range(types.Position(0, 0), types.Position(0, 0))
        (fix_all,) = await code_actions(client, uri, whole, only=["source.fixAll"])
        assert fix_all.title == "thunder-lint: fix all (safe and unsafe fixes)"
        assert apply_text_edits(MODELS, edits_of(fix_all, uri, version=1)) == MODELS.replace("x.reshape(-1)", "x.view(-1)")


async def test_fix_all_applies_every_fix_and_the_file_lints_clean_of_them(workspace, tmp_path):
    async with session(workspace, tmp_path, init_options={"unsafeFixes": True}) as client:
        uri = open_doc(client, workspace / "models.py")
        await diagnostics(client, uri, 1, until=lambda ds: "TL101" in codes(ds))
        whole = types.Range(types.Position(0, 0), types.Position(0, 0))
        actions = await code_actions(client, uri, whole, only=["source.fixAll"])
        (fix_all,) = actions
        assert fix_all.kind == "source.fixAll.thunder-lint"
        text = apply_text_edits(MODELS, edits_of(fix_all, uri, version=1))
        assert text == MODELS.replace("x.reshape(-1)", "x.view(-1)")  # the first fix of each finding, as --fix
        change_doc(client, uri, 2, new_text=text)
        # linted again: the explicit view now writes into the input in place (TL102), which is the point
        assert codes(await diagnostics(client, uri, 2)) == ["TL102", "TL201"]
        # nothing left to fix: no fix-all offered
        assert await code_actions(client, uri, whole, only=["source.fixAll.thunder-lint"]) == []


async def test_hover_on_a_finding_shows_the_rule_docs(workspace, tmp_path):
    async with session(workspace, tmp_path) as client:
        uri = open_doc(client, workspace / "models.py")
        diags = await diagnostics(client, uri, 1, until=lambda ds: "TL101" in codes(ds))
        tl101 = by_code(diags, "TL101")
        hover = await asyncio.wait_for(client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=tl101.range.start)), TIMEOUT)
        assert hover.contents.kind == types.MarkupKind.Markdown
        value = hover.contents.value
        assert value.startswith("**TL101**") and tl101.message in value
        for heading in ("## What it does", "## Why is this bad?", "## Fix safety"):
            assert heading in value
        assert hover.range == tl101.range
        # away from any finding: nothing
        empty = await asyncio.wait_for(client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(0, 0))), TIMEOUT)
        assert empty is None


async def test_configuration_change_reselects_and_hides_unsafe_fixes(workspace, tmp_path):
    async with session(workspace, tmp_path, init_options={"ignore": ["TL201"], "unsafeFixes": True}) as client:
        uri = open_doc(client, workspace / "models.py")
        # linted with the index (TL101's related location is train.py's compile), and TL201 stays off
        await diagnostics(client, uri, 1, until=lambda ds: codes(ds) == ["TL101"] and ds[0].related_information)

        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"thunder-lint": {"select": ["TL2"], "unsafeFixes": False, "target": "thunder"}}))
        diags = await diagnostics(client, uri, until=lambda ds: codes(ds) == ["TL201"])
        # the target setting: thunder's hazard (a stale value baked in), not torch.compile's cost (a recompile)
        assert "bake in" in diags[0].message and "recompile" not in diags[0].message

        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"thunder-lint": {"select": ["TL101"], "unsafeFixes": False}}))
        diags = await diagnostics(client, uri, until=lambda ds: codes(ds) == ["TL101"])
        actions = await code_actions(client, uri, diags[0].range, diags)
        assert [a.title for a in actions][-1] == "Add `# noqa: TL101` (suppress this finding on line 13)"
        assert "fix all" not in " ".join(a.title for a in actions)  # unsafeFixes false: no unsafe fix-all


async def test_bad_settings_are_reported_and_the_rest_applies(workspace, tmp_path):
    async with session(workspace, tmp_path, init_options={"select": "TL999", "ignore": ["TL201"], "target": 3}) as client:
        uri = open_doc(client, workspace / "models.py")
        await diagnostics(client, uri, 1, until=lambda ds: codes(ds) == ["TL101"])
        shown = [m.message for m in client.messages]
        assert any("TL999" in m and "select" in m for m in shown), shown
        assert any("`target`" in m for m in shown), shown


async def test_syntax_error_is_tl001_and_the_server_keeps_going(workspace, tmp_path):
    async with session(workspace, tmp_path) as client:
        uri = open_doc(client, workspace / "models.py")
        await diagnostics(client, uri, 1, until=lambda ds: "TL101" in codes(ds))
        broken = MODELS.replace("def forward(self, x):", "def forward(self, x)")
        change_doc(client, uri, 2, new_text=broken)
        (d,) = await diagnostics(client, uri, 2)
        assert d.code == "TL001" and d.severity == types.DiagnosticSeverity.Error
        assert d.range.start.line == 11
        assert "syntax error" in d.message
        change_doc(client, uri, 3, new_text=MODELS)
        assert {"TL101", "TL201"} <= set(codes(await diagnostics(client, uri, 3)))


async def test_huge_buffer_is_tl002_without_parsing(workspace, tmp_path):
    async with session(workspace, tmp_path) as client:
        big = "x = 1\n" * 800_000  # 4.8 MB > the 4 MiB limit
        uri = open_doc(client, workspace / "big.py", text=big)
        (d,) = await diagnostics(client, uri, 1)
        assert d.code == "TL002" and "too large" in d.message
