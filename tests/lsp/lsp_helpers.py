"""Helpers of the end-to-end tests of ``thunder-lint lsp``: the real server as a subprocess, driven over its stdio by
pytest-lsp's LanguageClient (a pygls client that also checks the server's requests against the client
capabilities it declared).

``session`` starts the server, initializes it for a workspace folder, and shuts it down cleanly at
the end (asserting exit status 0). Helpers wait for diagnostics of a document version and apply edits
the way an editor does (positions in UTF-16 code units, converted here independently of the server).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402
from pygls.protocol import default_converter  # noqa: E402
from pytest_lsp import LanguageClient, client_capabilities  # noqa: E402
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 60.0  # seconds: generous, the machine is shared and a cold server imports the engine
LAUNCHERS = Path(__file__).parent / "launchers"


def server_env(tmp_path: Path, extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg-cache")  # where the rule doc pages are written
    env.update(extra or {})
    return env


def make_client() -> LanguageClient:
    """pytest-lsp's client, also remembering the version each publishDiagnostics was for."""
    client = LanguageClient(converter_factory=default_converter)
    client.diagnostic_versions = {}
    client.publishes = {}  # uri -> how many times the server published its diagnostics (each is one lint)

    def publish(ls: LanguageClient, params: types.PublishDiagnosticsParams):
        ls.diagnostics[params.uri] = params.diagnostics
        ls.diagnostic_versions[params.uri] = params.version
        ls.publishes[params.uri] = ls.publishes.get(params.uri, 0) + 1

    client.registrations = []

    def register_capability(ls: LanguageClient, params: types.RegistrationParams):
        ls.registrations.extend(params.registrations)

    features = dict(DEFAULT_CLIENT_FEATURES)
    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = publish
    features[types.CLIENT_REGISTER_CAPABILITY] = register_capability
    register_lsp_features(client, features)
    return client


@contextlib.asynccontextmanager
async def session(root: Path, tmp_path: Path, *, client_name: str = "visual-studio-code",
                  init_options=None, capabilities: types.ClientCapabilities | None = None, configuration=None,
                  launcher: str | None = None, env: dict | None = None, shutdown: bool = True):
    """A started and initialized server for the workspace folder ``root``."""
    client = make_client()
    if configuration is not None:
        client.set_configuration(configuration, section="thunder-lint")
    command = [str(LAUNCHERS / launcher)] if launcher else ["-m", "analyzer.cli", "lsp"]
    await client.start_io(sys.executable, *command, env=server_env(tmp_path, env), cwd=str(root))
    caps = capabilities or client_capabilities(client_name)
    result = await asyncio.wait_for(client.initialize_session(types.InitializeParams(
        capabilities=caps,
        root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
        initialization_options=init_options,
    )), TIMEOUT)
    client.init_result = result
    try:
        yield client
        if shutdown:
            await asyncio.wait_for(client.shutdown_session(), TIMEOUT)
            assert client._server.returncode == 0, f"server exit status {client._server.returncode}"
    finally:
        if client._server is not None and client._server.returncode is None:
            client._server.kill()
        await client.stop()


def open_doc(client: LanguageClient, path: Path, text: str | None = None, version: int = 1) -> str:
    uri = path.as_uri()
    text = path.read_text(encoding="utf-8") if text is None else text
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)))
    return uri


async def diagnostics(client: LanguageClient, uri: str, version: int | None = None, until=None,
                      timeout: float = TIMEOUT) -> list[types.Diagnostic]:
    """The diagnostics published for ``uri`` (for ``version``, when given), once ``until`` holds on them."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        if uri in client.diagnostics and (version is None or client.diagnostic_versions.get(uri) == version):
            got = list(client.diagnostics[uri])
            if until is None or until(got):
                return got
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"no matching diagnostics for {uri} (version {version}) in {timeout} s; "
                                 f"last: {client.diagnostics.get(uri)!r} for version {client.diagnostic_versions.get(uri)}; "
                                 f"server log: {[m.message for m in client.log_messages]}")
        await asyncio.sleep(0.02)


async def indexed(client: LanguageClient, timeout: float = TIMEOUT) -> str:
    """Wait until the server says it has indexed the workspace (its log message), and return it."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        for m in client.log_messages:
            if m.message.startswith("thunder-lint: indexed "):
                return m.message
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"the workspace was not indexed in {timeout} s: {[m.message for m in client.log_messages]}")
        await asyncio.sleep(0.02)


def codes(diags) -> list[str]:
    return sorted(str(d.code) for d in diags)


# --- an editor's side of edits ---------------------------------------------------------------------
def _offset(text: str, pos: types.Position) -> int:
    """Offset in ``text`` of an LSP position in UTF-16 code units (lines end at \\n, \\r\\n, \\r)."""
    import re

    starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
    start = starts[pos.line]
    end = starts[pos.line + 1] if pos.line + 1 < len(starts) else len(text)
    line = text[start:end].rstrip("\r\n")
    units = line.encode("utf-16-le", "surrogatepass")[: 2 * pos.character]
    return start + len(units.decode("utf-16-le", "surrogatepass"))


def apply_text_edits(text: str, edits: list[types.TextEdit]) -> str:
    spans = sorted(((_offset(text, e.range.start), _offset(text, e.range.end), e.new_text) for e in edits), reverse=True)
    for a, b, new in spans:
        text = text[:a] + new + text[b:]
    return text


def edits_of(action: types.CodeAction, uri: str, version: int | None = None) -> list[types.TextEdit]:
    edit = action.edit
    assert edit is not None, action
    if edit.document_changes:
        (change,) = edit.document_changes
        assert change.text_document.uri == uri
        if version is not None:
            assert change.text_document.version == version, "a versioned edit must name the linted version"
        return list(change.edits)
    return list(edit.changes[uri])


def change_doc(client: LanguageClient, uri: str, version: int, new_text: str | None = None,
               edits: list[types.TextEdit] | None = None) -> None:
    """didChange: incremental edits as given, or the whole text."""
    if edits is not None:
        changes = [types.TextDocumentContentChangePartial(range=e.range, text=e.new_text)
                   for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True)]
    else:
        changes = [types.TextDocumentContentChangeWholeDocument(text=new_text)]
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version), content_changes=changes))


async def code_actions(client: LanguageClient, uri: str, rng: types.Range, diags=(), only=None):
    return await asyncio.wait_for(client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=rng,
        context=types.CodeActionContext(diagnostics=list(diags), only=only))), TIMEOUT) or []
