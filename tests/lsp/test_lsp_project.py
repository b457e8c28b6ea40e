"""The workspace's project index in the server: compile sites in other files, unsaved buffers over the disk,
files changed on disk, the config found as the CLI finds it, `assume-compiled` from the settings."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_helpers import change_doc, codes, diagnostics, indexed, open_doc, session
from lsprotocol import types

pytestmark = pytest.mark.asyncio

MODELS = '''\
import torch
from torch import nn

scale = 2.0


class Net(nn.Module):
    def forward(self, x):
        return x * scale
'''
TRAIN = '''\
import torch

from models import Net

model = torch.compile(Net())
'''
TRAIN_WITHOUT_COMPILE = '''\
from models import Net

model = Net()
'''


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "models.py").write_text(MODELS, encoding="utf-8")
    (root / "train.py").write_text(TRAIN, encoding="utf-8")
    # the library default off (a project with no compile call would lint every forward as compiled): here only
    # compile calls make code compiled, so the index's updates show
    (root / "pyproject.toml").write_text("[tool.thunder-lint]\nassume-compiled = []\n", encoding="utf-8")
    return root


def watched(client, path: Path, kind: types.FileChangeType) -> None:
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=path.as_uri(), type=kind)]))


async def test_files_are_watched_and_an_unsaved_buffer_wins_over_the_disk(workspace, tmp_path):
    async with session(workspace, tmp_path) as client:
        models = open_doc(client, workspace / "models.py")
        await diagnostics(client, models, 1, until=lambda ds: codes(ds) == ["TL201"])
        registered = [r for r in client.registrations if r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES]
        assert registered, client.registrations
        globs = {w["globPattern"] for w in registered[0].register_options["watchers"]}  # left as JSON by the client
        assert {"**/*.py", "**/pyproject.toml"} <= globs

        # train.py opened and edited, never saved: its buffer no longer compiles Net
        train = open_doc(client, workspace / "train.py")
        change_doc(client, train, 2, new_text=TRAIN_WITHOUT_COMPILE)
        await diagnostics(client, models, 1, until=lambda ds: ds == [])
        assert (workspace / "train.py").read_text() == TRAIN  # nothing was written

        # closing it without saving: the disk (which compiles Net) counts again
        client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=train)))
        await diagnostics(client, models, 1, until=lambda ds: codes(ds) == ["TL201"])


async def test_a_file_changed_on_disk_updates_the_index(workspace, tmp_path):
    async with session(workspace, tmp_path) as client:
        models = open_doc(client, workspace / "models.py")
        await diagnostics(client, models, 1, until=lambda ds: codes(ds) == ["TL201"])
        (workspace / "train.py").write_text(TRAIN_WITHOUT_COMPILE)
        watched(client, workspace / "train.py", types.FileChangeType.Changed)
        await diagnostics(client, models, 1, until=lambda ds: ds == [])

        # a new file that compiles it
        (workspace / "main.py").write_text("import thunder\nfrom models import Net\nnet = thunder.jit(Net())\n")
        watched(client, workspace / "main.py", types.FileChangeType.Created)
        diags = await diagnostics(client, models, 1, until=lambda ds: codes(ds) == ["TL201"])
        assert diags[0].related_information[0].location.uri == (workspace / "main.py").as_uri()
        assert "thunder.jit(Net())" in diags[0].related_information[0].message

        (workspace / "main.py").unlink()
        watched(client, workspace / "main.py", types.FileChangeType.Deleted)
        await diagnostics(client, models, 1, until=lambda ds: ds == [])

        # a folder that appears (moved in) and goes away, reported as the folder alone
        (workspace / "apps").mkdir()
        (workspace / "apps" / "run.py").write_text("import torch\nfrom models import Net\nm = torch.compile(Net())\n")
        watched(client, workspace / "apps", types.FileChangeType.Created)
        await diagnostics(client, models, 1, until=lambda ds: codes(ds) == ["TL201"])
        (workspace / "apps" / "run.py").unlink()
        (workspace / "apps").rmdir()
        watched(client, workspace / "apps", types.FileChangeType.Deleted)
        await diagnostics(client, models, 1, until=lambda ds: ds == [])


async def test_config_is_found_as_the_cli_finds_it_and_reloaded_when_it_changes(workspace, tmp_path):
    (workspace / "pyproject.toml").write_text('[tool.thunder-lint]\nignore = ["TL201"]\n')
    async with session(workspace, tmp_path) as client:
        models = open_doc(client, workspace / "models.py")
        await indexed(client)
        await diagnostics(client, models, 1, until=lambda ds: ds == [])

        (workspace / "pyproject.toml").write_text('[tool.thunder-lint]\ntarget = "thunder"\n')
        watched(client, workspace / "pyproject.toml", types.FileChangeType.Changed)
        diags = await diagnostics(client, models, 1, until=lambda ds: codes(ds) == ["TL201"])
        assert "recompile" not in diags[0].message  # target = "thunder" from the new config

        (workspace / "pyproject.toml").write_text('[tool.thunder-lint]\nselect = ["TL999"]\n')
        watched(client, workspace / "pyproject.toml", types.FileChangeType.Changed)
        await diagnostics(client, models, 1, until=lambda ds: codes(ds) == ["TL201"] and "recompile" in ds[0].message)
        assert any("TL999" in m.message for m in client.messages), [m.message for m in client.messages]


async def test_assume_compiled_from_the_settings(tmp_path):
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "ops.py").write_text("import torch\n\nlimit = 3\n\n\ndef clip(x):\n    return x.clamp(max=limit)\n")
    async with session(root, tmp_path, init_options={"assumeCompiled": ["pkg.ops.*"]}) as client:
        uri = open_doc(client, root / "pkg" / "ops.py")
        diags = await diagnostics(client, uri, 1, until=lambda ds: codes(ds) == ["TL201"])
        assert diags[0].related_information is None  # compiled by the setting, not at a place in the code
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"assumeCompiled": []}))
        await diagnostics(client, uri, 1, until=lambda ds: ds == [])


async def test_settings_pulled_with_workspace_configuration(workspace, tmp_path):
    async with session(workspace, tmp_path, configuration={"ignore": ["TL201"]}) as client:
        models = open_doc(client, workspace / "models.py")
        await indexed(client)
        await diagnostics(client, models, until=lambda ds: ds == [])
        client.set_configuration({"ignore": []}, section="thunder-lint")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
        await diagnostics(client, models, until=lambda ds: codes(ds) == ["TL201"])


async def test_the_library_default_comes_once_the_workspace_is_scanned(tmp_path):
    """No compile call anywhere in the workspace (a model library): once the scan has read every file, each
    nn.Module forward is linted as compiled, as the CLI does; with a compile call in a file the scan reads
    later, the first diagnostics never claim the library default."""
    root = tmp_path / "lib"
    root.mkdir()
    (root / "models.py").write_text(MODELS, encoding="utf-8")
    async with session(root, tmp_path) as client:
        models = open_doc(client, root / "models.py")
        diags = await diagnostics(client, models, 1, until=lambda ds: codes(ds) == ["TL201"])
        assert diags[0].message.startswith("if `Net` is compiled")
        assert not diags[0].related_information  # no compile site to point at


OTHER = '''\
import torch


def helper(x):
    y = x.reshape(-1)
    y.add_(1)
    return x
'''


async def test_an_edit_relints_the_documents_whose_facts_it_changes_only(workspace, tmp_path):
    """The index is incremental as the CLI's cached pass is (analyzer/project/incremental.py): an edit that changes
    what train.py contributes re-lints the open documents whose facts change (models.py), not the others; an edit
    that changes no contribution re-lints none but itself."""
    import asyncio

    (workspace / "train.py").write_text(TRAIN_WITHOUT_COMPILE, encoding="utf-8")
    (workspace / "other.py").write_text(OTHER, encoding="utf-8")
    async with session(workspace, tmp_path) as client:
        models = open_doc(client, workspace / "models.py")
        other = open_doc(client, workspace / "other.py")
        train = open_doc(client, workspace / "train.py")
        await indexed(client)
        await diagnostics(client, models, 1, until=lambda ds: ds == [])
        await diagnostics(client, other, 1, until=lambda ds: codes(ds) == ["TL101"])
        await diagnostics(client, train, 1)
        await asyncio.sleep(0.5)  # (re-lints the end of the scan scheduled)
        before = dict(client.publishes)

        change_doc(client, train, 2, new_text=TRAIN)  # now compiles Net
        await diagnostics(client, models, 1, until=lambda ds: codes(ds) == ["TL201"])
        await diagnostics(client, train, 2)
        assert client.publishes[models] == before[models] + 1
        assert client.publishes[other] == before[other]

        # a comment after the code: train.py's summary is as it was, so no other document is linted again
        change_doc(client, train, 3, new_text=TRAIN + "# compiled once at start-up\n")
        await diagnostics(client, train, 3)
        change_doc(client, other, 2, new_text=OTHER + "\n")  # a barrier: linted after anything scheduled before
        await diagnostics(client, other, 2)
        assert client.publishes[models] == before[models] + 1
        assert client.publishes[other] == before[other] + 1


async def test_an_edit_in_a_file_whose_text_the_index_read_counts_though_its_summary_is_the_same(workspace, tmp_path):
    """``setup(Net())`` compiles Net through a wrapper: the index reads train.py's text for the call, so an edit
    there that leaves train.py's summary as it was still rebuilds the index."""
    (workspace / "setup.py").write_text("import torch\n\n\ndef setup(model):\n    return torch.compile(model)\n")
    (workspace / "train.py").write_text("from setup import setup\nfrom models import Net\n\nmodel = setup(Net())\n")
    async with session(workspace, tmp_path) as client:
        models = open_doc(client, workspace / "models.py")
        train = open_doc(client, workspace / "train.py")
        await indexed(client)
        diags = await diagnostics(client, models, 1, until=lambda ds: codes(ds) == ["TL201"])
        assert "setup(Net())" in diags[0].related_information[0].message
        change_doc(client, train, 2, new_text="from setup import setup\nfrom models import Net\n\nmodel = setup(None)\n")
        await diagnostics(client, models, 1, until=lambda ds: ds == [])
