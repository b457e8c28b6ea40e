"""Bad input never stops the server: an internal error, malformed messages, documents it never saw,
buffers that are not files, other position encodings and line breaks; exit follows the protocol."""

from __future__ import annotations

import asyncio
import json

import pytest
from lsp_helpers import (
    apply_text_edits, change_doc, code_actions, codes, diagnostics, edits_of, open_doc, session,
)
from lsprotocol import types
from pytest_lsp import client_capabilities

pytestmark = pytest.mark.asyncio

FLAT = "import torch\n\n\n@torch.compile\ndef f(x):\n    flat = x.reshape(-1)\n    flat.add_(1)\n    return x\n"


async def test_internal_error_is_logged_the_document_skipped_and_the_server_goes_on(tmp_path):
    async with session(tmp_path, tmp_path, launcher="failing_engine.py") as client:
        bad = open_doc(client, tmp_path / "bad.py", text="BOOM = 1\n" + FLAT)
        good = open_doc(client, tmp_path / "good.py", text=FLAT)
        assert codes(await diagnostics(client, good, 1)) == ["TL101"]
        errors = [m.message for m in client.log_messages if m.type == types.MessageType.Error]
        assert any("internal error while linting" in m and "bad.py" in m and "injected engine failure" in m
                   for m in errors), errors
        assert bad not in client.diagnostics  # skipped: nothing published for it
        # the document can recover: once the text no longer trips the engine it is linted
        change_doc(client, bad, 2, new_text=FLAT)
        assert codes(await diagnostics(client, bad, 2)) == ["TL101"]


async def test_malformed_messages_do_not_stop_the_server(tmp_path):
    async with session(tmp_path, tmp_path) as client:
        writer = client._server.stdin
        for body in (b"{not json", json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen",
                                                "params": {"textDocument": {"uri": 5}}}).encode()):
            writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()
        # a change to a document that was never opened, and a request about one
        change_doc(client, (tmp_path / "never.py").as_uri(), 2, new_text="x = 1\n")
        assert await code_actions(client, (tmp_path / "never.py").as_uri(),
                                  types.Range(types.Position(0, 0), types.Position(0, 0))) == []
        uri = open_doc(client, tmp_path / "ok.py", text=FLAT)
        assert codes(await diagnostics(client, uri, 1)) == ["TL101"]


async def test_untitled_buffer_and_nul_bytes(tmp_path):
    async with session(tmp_path, tmp_path) as client:
        untitled = "untitled:Untitled-1"
        client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=untitled, language_id="python", version=1, text=FLAT)))
        assert codes(await diagnostics(client, untitled, 1)) == ["TL101"]
        nul = open_doc(client, tmp_path / "nul.py", text="x = 1\ny = '\0'\n")
        (d,) = await diagnostics(client, nul, 1)
        assert d.code == "TL001" and "null byte" in d.message and d.range.start.line == 1


async def test_utf8_positions_when_the_client_asks_for_them(tmp_path):
    caps = client_capabilities("visual-studio-code")
    caps.general = types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf8])
    text = 'import torch\n\n\n@torch.compile\ndef f(x):\n    s = "é😀"; flat = x.reshape(-1); flat.add_(1)\n    return x\n'
    async with session(tmp_path, tmp_path, capabilities=caps) as client:
        assert client.init_result.capabilities.position_encoding == types.PositionEncodingKind.Utf8
        uri = open_doc(client, tmp_path / "u.py", text=text)
        (d,) = await diagnostics(client, uri, 1)
        line = text.splitlines()[5]
        start = len(line[: line.index("flat.add_")].encode("utf-8"))
        assert (d.range.start.line, d.range.start.character) == (5, start)
        assert d.range.end.character == start + len("flat.add_(1)")


async def test_incremental_edits_after_a_form_feed_and_crlf_land_in_place(tmp_path):
    # \f, \x1c and \u2028 are no line breaks for LSP or Python (str.splitlines thinks they are)
    # (`flat` is read after the write: the copy is an applicable fix, issue 31)
    text = "\f\nimport torch\r\ns = '\x1c\u2028'\r\n@torch.compile\rdef f(x):\r\n    flat = x.reshape(-1)\r\n    flat.add_(1)\r\n    return x, flat\r\n"
    async with session(tmp_path, tmp_path, client_name="neovim@v0.7.0") as client:
        uri = open_doc(client, tmp_path / "ff.py", text=text)
        (d,) = await diagnostics(client, uri, 1)
        assert d.code == "TL101" and (d.range.start.line, d.range.start.character) == (6, 4)
        # insert a line before the finding, incrementally, then take the quick fix
        edit = types.TextEdit(types.Range(types.Position(5, 0), types.Position(5, 0)), "    y = 1\r\n")
        change_doc(client, uri, 2, edits=[edit])
        text = apply_text_edits(text, [edit])
        (d,) = await diagnostics(client, uri, 2)
        assert (d.range.start.line, d.range.start.character) == (7, 4)
        actions = await code_actions(client, uri, d.range, [d])
        clone = [a for a in actions if "clone" in a.title][0]
        # neovim 0.7 declares no documentChanges support: plain `changes`
        assert clone.edit.document_changes is None
        edits = edits_of(clone, uri)
        text = apply_text_edits(text, edits)
        assert "    flat = x.reshape(-1).clone()\r\n" in text
        change_doc(client, uri, 3, edits=edits)
        assert await diagnostics(client, uri, 3) == []


async def test_requests_during_a_burst_of_changes_see_the_latest_text(tmp_path):
    async with session(tmp_path, tmp_path, init_options={"debounceMs": 200}) as client:
        uri = open_doc(client, tmp_path / "b.py", text="x = 1\n")
        await diagnostics(client, uri, 1)
        for v in range(2, 12):  # typing: each change within the debounce of the last
            change_doc(client, uri, v, new_text="x = 1\n" * v)
        change_doc(client, uri, 12, new_text=FLAT)
        # a code action request right away lints the latest text, without waiting for the debounce
        actions = await code_actions(client, uri, types.Range(types.Position(6, 4), types.Position(6, 4)))
        assert any("aliasing" in a.title for a in actions), [a.title for a in actions]
        assert codes(await diagnostics(client, uri, 12)) == ["TL101"]
        await asyncio.sleep(0.4)  # past the debounce: no stale publish replaces the latest one
        assert client.diagnostic_versions[uri] == 12
