"""POST /analyze with a whole repository as a gzip'd tar (issue 32): read in memory, the files the CLI would lint
in that folder (default excludes, .gitignore, the archive's config), findings equal to the CLI's on the same tree;
hostile archives (names leaving the root, links, devices, a gzip bomb, a truncated or non-tar body) get a 4xx with
a reason, and the server keeps serving. A real server on loopback with small archive limits."""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import tarfile

import pytest
from server_helpers import REPO, ServerProcess

MODEL = "import torch\nfrom torch import nn\n\n\nclass Block(nn.Module):\n    def forward(self, x):\n        print('x')\n        y = x.reshape(-1)\n        y.add_(1)\n        return x.sum().item()\n"
TRAIN = "import torch\nfrom pkg.model import Block\n\nmodel = torch.compile(Block())\n"
TREE = {
    "pkg/__init__.py": "",
    "pkg/model.py": MODEL,
    "train.py": TRAIN,
    "build/gen.py": MODEL,  # the default exclude skips it
    "generated/out.py": MODEL,  # .gitignore skips it
    ".gitignore": "generated/\n",
    "pyproject.toml": "[tool.thunder-lint]\nignore = ['TL101']\n",
    "README.md": "not linted\n",
}
INFLATE_LIMIT = 2_000_000


@pytest.fixture(scope="module")
def server():
    s = ServerProcess("--workers", "1", "--max-archive-bytes", "300000", "--max-archive-inflated-bytes", str(INFLATE_LIMIT),
                      "--max-archive-files", "50", "--max-files", "2")
    yield s
    s.stop()


def _tar(members) -> bytes:
    """A tar.gz of (name, bytes | TarInfo-tweak) members, made in memory."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, content in members:
            if callable(content):
                info = tarfile.TarInfo(name)
                content(info)
                tar.addfile(info)
            else:
                info = tarfile.TarInfo(name)
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()


def _post(client, body: bytes, query: str = ""):
    return client.post("/analyze" + query, content=body, headers={"Content-Type": "application/gzip"})


def _cli(tmp_path, tree=None):
    """The CLI's findings on `tree` (default TREE) written under tmp_path."""
    for name, text in (TREE if tree is None else tree).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    r = subprocess.run([sys.executable, "-m", "analyzer.cli", "--output-format", "json", "--no-cache", "--exit-zero", "."],
                       cwd=tmp_path, capture_output=True, timeout=120, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_a_repository_as_tar_gz_gives_the_cli_findings(server, tmp_path):
    body = _tar((n, t.encode()) for n, t in TREE.items())
    with server.client() as c:
        r = _post(c, body)
    assert r.status_code == 200, r.text
    got = r.json()["diagnostics"]
    assert got == _cli(tmp_path)
    assert {d["path"] for d in got} == {"pkg/model.py"}  # build/ and the ignored folder were not linted
    assert {d["code"] for d in got} == {"TL204", "TL302"}  # the archive's pyproject.toml ignores TL101
    # more files than a JSON request may send (--max-files 2): the archive limits apply
    assert len(r.json()["files"]) > 2
    # options as query parameters, the format too
    with server.client() as c:
        r = _post(c, body, "?select=TL204&format=sarif")
    assert r.status_code == 200
    results = r.json()["runs"][0]["results"]
    assert [x["ruleId"] for x in results] == ["TL204"]


def test_the_curl_line_of_the_readme(server, tmp_path):
    # `tar czf - . | curl --data-binary @- -H 'Content-Type: application/gzip' .../analyze`, with the real tar(1)
    for name, text in TREE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    body = subprocess.run(["tar", "czf", "-", "."], cwd=tmp_path, capture_output=True, check=True).stdout
    with server.client() as c:
        r = _post(c, body)
    assert r.status_code == 200, r.text
    assert {d["path"] for d in r.json()["diagnostics"]} == {"pkg/model.py"}  # ./ prefixes read as the root


def _symlink(info):
    info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"


def _hardlink(info):
    info.type, info.linkname = tarfile.LNKTYPE, "pkg/model.py"


def _device(info):
    info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3


def _fifo(info):
    info.type = tarfile.FIFOTYPE


@pytest.mark.parametrize(("member", "content", "status", "words"), [
    ("../evil.py", b"x = 1\n", 422, "leaves the archive"),
    ("pkg/../../evil.py", b"x = 1\n", 422, "leaves the archive"),
    ("/etc/evil.py", b"x = 1\n", 422, "absolute"),
    ("link.py", _symlink, 422, "link"),
    ("hard.py", _hardlink, 422, "link"),
    ("dev", _device, 422, "device"),
    ("pipe", _fifo, 422, "FIFO"),
])
def test_hostile_members_are_refused_and_the_server_keeps_serving(server, member, content, status, words):
    body = _tar([("pkg/model.py", MODEL.encode()), (member, content)])
    with server.client() as c:
        r = _post(c, body)
        assert r.status_code == status, r.text
        assert words in r.text and "unsafe_archive_member" in r.text
        assert c.get("/healthz").status_code == 200
        assert _post(c, _tar([("ok.py", b"x = 1\n")])).status_code == 200


def test_a_gzip_bomb_stops_at_the_inflate_limit(server):
    bomb = gzip.compress(b"\0" * (INFLATE_LIMIT * 4), 9)  # 8 MB of zeros in a few KB
    assert len(bomb) < 300_000
    with server.client() as c:
        r = _post(c, bomb)
        assert r.status_code == 413 and "archive_too_large_inflated" in r.text
        assert _post(c, _tar([("ok.py", b"x = 1\n")])).status_code == 200


@pytest.mark.parametrize(("body", "words"), [
    (b"", "empty"),
    (b"not gzip at all", "not valid gzip"),
    (gzip.compress(b"plain text, no tar"), "not a tar"),
])
def test_broken_bodies_get_a_400(server, body, words):
    with server.client() as c:
        r = _post(c, body)
    assert r.status_code == 400 and words in r.text, r.text


def test_a_truncated_upload_gets_a_400(server):
    body = _tar([("pkg/model.py", MODEL.encode() * 50)])
    with server.client() as c:
        r = _post(c, body[: len(body) // 2])
    assert r.status_code == 400 and "invalid_archive" in r.text


def test_archive_limits(server):
    many = _tar([(f"m{i}.py", b"x = 1\n") for i in range(60)])
    with server.client() as c:
        r = _post(c, many)
        assert r.status_code == 413 and "too_many_files" in r.text
        big = io.BytesIO()
        big.write(b"\x1f\x8b" + bytes(400_000))
        r = _post(c, big.getvalue())
        assert r.status_code == 413  # the compressed body itself is over --max-archive-bytes


def test_a_standalone_config_holding_a_tool_table_reads_as_the_cli_reads_it(server, tmp_path):
    # thunder-lint.toml may hold `[tool.thunder-lint]` (the CLI unwraps it); the archive's file selection read it
    # as top-level keys
    tree = {n: t for n, t in TREE.items() if n != "pyproject.toml"}
    tree["thunder-lint.toml"] = "[tool.thunder-lint]\nignore = ['TL101']\nextend-exclude = ['other/']\n"
    tree["other/x.py"] = MODEL
    expected = _cli(tmp_path, tree)
    with server.client() as c:
        got = _post(c, _tar((n, t.encode()) for n, t in tree.items()))
    assert got.status_code == 200, got.text
    assert got.json()["diagnostics"] == expected
    assert {d["path"] for d in got.json()["diagnostics"]} == {"pkg/model.py"}
