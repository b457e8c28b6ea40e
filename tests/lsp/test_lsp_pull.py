"""Pull diagnostics (textDocument/diagnostic, LSP 3.17) beside push: advertised to every client; a client that
declares it pulls, gets no pushed diagnostics (it would show both), and is told to pull again when another
file changes a document's findings (workspace/diagnostic/refresh)."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path

import pytest
from lsp_helpers import TIMEOUT, change_doc, codes, diagnostics, open_doc, session
from lsprotocol import types
from pytest_lsp import client_capabilities

pytestmark = pytest.mark.asyncio

MODELS = "import torch\nfrom torch import nn\n\nscale = 2.0\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n" \
         "        flat = x.reshape(-1); flat.add_(1)\n        return x * scale\n"
TRAIN = "import torch\n\nfrom models import Net\n\nmodel = torch.compile(Net())\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "models.py").write_text(MODELS, encoding="utf-8")
    (root / "train.py").write_text(TRAIN, encoding="utf-8")
    return root


def pulling() -> types.ClientCapabilities:
    caps = copy.deepcopy(client_capabilities("visual-studio-code"))
    caps.text_document.diagnostic = types.DiagnosticClientCapabilities(dynamic_registration=False)
    caps.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    return caps


async def pull(client, uri: str, previous: str | None = None):
    return await asyncio.wait_for(client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri), previous_result_id=previous)), TIMEOUT)


async def test_every_client_is_told_the_server_answers_pulls(workspace, tmp_path):
    async with session(workspace, tmp_path) as client:
        provider = client.init_result.capabilities.diagnostic_provider
        assert provider.identifier == "thunder-lint" and provider.inter_file_dependencies
        # a client that does not declare pull support gets pushes, and may pull as well: the same findings
        uri = open_doc(client, workspace / "models.py")
        pushed = await diagnostics(client, uri, 1, until=lambda ds: "TL201" in codes(ds))
        report = await pull(client, uri)
        assert report.kind == "full" and list(report.items) == pushed


async def test_a_pulling_client_gets_the_findings_by_pull_and_none_pushed(workspace, tmp_path):
    async with session(workspace, tmp_path, capabilities=pulling()) as client:
        refreshes = []
        features = client.protocol.fm.features  # pytest-lsp answers the refresh request: count them on the way
        answer = features[types.WORKSPACE_DIAGNOSTIC_REFRESH]

        def counted(*args):
            refreshes.append(1)
            return answer(*args)

        features[types.WORKSPACE_DIAGNOSTIC_REFRESH] = counted
        uri = open_doc(client, workspace / "models.py")
        # once the project index is built (in the background), train.py (never opened) compiles Net, so the
        # global read is TL201: the server says "pull again" and the next pull has it
        report = await pull(client, uri)
        deadline = asyncio.get_running_loop().time() + TIMEOUT
        while "TL201" not in codes(report.items) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
            if refreshes:
                report = await pull(client, uri, report.result_id)
        assert report.kind == "full" and sorted(codes(report.items)) == ["TL101", "TL201"] and refreshes
        assert report.result_id
        refreshes.clear()
        again = await pull(client, uri, report.result_id)
        assert again.kind == "unchanged" and again.result_id == report.result_id

        change_doc(client, uri, 2, new_text=MODELS.replace("x * scale", "x * 2.0"))
        changed = await pull(client, uri, report.result_id)
        assert changed.kind == "full" and [d.code for d in changed.items] == ["TL101"]
        assert changed.result_id != report.result_id
        await asyncio.sleep(0.5)
        assert uri not in client.diagnostics  # nothing pushed: the client would show every finding twice

        # another file changes the facts (train.py no longer compiles Net): the client is told to pull again
        train = open_doc(client, workspace / "train.py")
        await pull(client, train)
        change_doc(client, train, 2, new_text="import torch\n")
        deadline = asyncio.get_running_loop().time() + TIMEOUT
        while not refreshes and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
        assert refreshes
